// Package ui serves cairn's dashboard: a page of plain ES modules (Preact and htm, vendored from
// npm by vendor.sh) embedded in the binary, so `cairn serve` shows it with no build step and no
// request leaving the machine. The dashboard talks to the server only through the public GraphQL
// API at ../graphql (queries and mutations over HTTP, subscriptions over graphql-ws), with the API
// token the person types in when the server runs with --auth.
package ui

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed app
var files embed.FS

// contentSecurityPolicy allows the page to load and connect only to its own origin: a dashboard
// that reads workflow data must not be made to send it elsewhere. The one inline script is the
// import map, allowed by its hash.
var contentSecurityPolicy = "default-src 'self'; script-src 'self' '" + inlineScriptHash("app/index.html") + "'; " +
	"style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'self'; form-action 'self'; frame-ancestors 'none'"

// inlineScriptHash returns the CSP source ('sha256-...') of the one inline script of a page, its
// import map, so that editing the map cannot silently break the page.
func inlineScriptHash(name string) string {
	page, err := files.ReadFile(name)
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	const open, end = `<script type="importmap">`, `</script>`
	_, rest, ok := strings.Cut(string(page), open)
	body, _, ok2 := strings.Cut(rest, end)
	if !ok || !ok2 {
		panic("ui: " + name + " has no import map")
	}
	sum := sha256.Sum256([]byte(body))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// Handler serves the dashboard under prefix (for example "/ui"): the page at prefix+"/" (prefix
// alone redirects there) and its modules below it. Mount it on prefix+"/" and prefix.
func Handler(prefix string) http.Handler {
	prefix = strings.TrimSuffix(prefix, "/")
	app, err := fs.Sub(files, "app")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	static := http.StripPrefix(prefix+"/", http.FileServerFS(app))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if r.URL.Path == prefix {
			http.Redirect(w, r, prefix+"/", http.StatusMovedPermanently)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		// The files change only with cairn's version, but a page kept across an upgrade would
		// call the new API with old code: browsers ask again (the files are small).
		h.Set("Cache-Control", "no-cache")
		static.ServeHTTP(w, r)
	})
}
