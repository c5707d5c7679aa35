package server

import (
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/rs/cors"
)

// allowCORS lets pages from the browser origins of --allowed-origins call the API: it answers
// their preflights (OPTIONS with Access-Control-Request-Method) and marks their responses with
// Access-Control-Allow-Origin, allowing the Authorization and Content-Type headers (and
// Last-Event-ID, which an EventSource sends when it reconnects). Other origins get no CORS
// headers at all, so a browser keeps their pages from reading the answers. The patterns are the
// ones websockets accept: hosts ("app.example.com", "*.example.com") or scheme://host.
func allowCORS(patterns []string, next http.Handler) http.Handler {
	if len(patterns) == 0 {
		return next
	}
	return cors.New(cors.Options{
		AllowOriginFunc: func(origin string) bool { return originAllowed(patterns, origin) },
		AllowedMethods:  []string{http.MethodGet, http.MethodPost, http.MethodOptions},
		AllowedHeaders:  []string{"Authorization", "Content-Type", "Last-Event-ID", ConsistencyHeader},
		ExposedHeaders:  []string{ConsistencyHeader, ReadSourceHeader},
		MaxAge:          600,
	}).Handler(next)
}

// originAllowed matches an Origin header against the patterns as the websocket accept does:
// a pattern with "://" against scheme://host, any other against the host alone.
func originAllowed(patterns []string, origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	for _, p := range patterns {
		target := u.Host
		if strings.Contains(p, "://") {
			target = u.Scheme + "://" + u.Host
		}
		if ok, err := path.Match(strings.ToLower(p), strings.ToLower(target)); err == nil && ok {
			return true
		}
	}
	return false
}
