package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// TestCORSForAllowedOriginsOnly runs a node with --allowed-origins and checks, as a browser
// would, that a configured origin gets its preflight answered and its responses marked, with
// Authorization and Content-Type allowed (also under --auth, whose preflights carry no token),
// while another origin gets no CORS header at all.
func TestCORSForAllowedOriginsOnly(t *testing.T) {
	t.Parallel()
	n := startNode(t, nil, "--database", dbtest.URL(t, persistence.KindSQLite), "--addr", "127.0.0.1:0", "--log-format", "json",
		"--auth", "--allowed-origins", "app.example.com, https://*.example.org")
	base := "http://" + n.addr + "/graphql"
	do := func(method, origin string, header map[string]string) *http.Response {
		t.Helper()
		var body *strings.Reader
		if method == http.MethodPost {
			body = strings.NewReader(`{"query":"{ __typename }"}`)
		} else {
			body = strings.NewReader("")
		}
		req, err := http.NewRequest(method, base, body)
		require.NoError(t, err)
		req.Header.Set("Origin", origin)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp
	}
	preflight := map[string]string{"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type"}

	for _, origin := range []string{"https://app.example.com", "http://app.example.com", "https://ui.example.org"} {
		resp := do(http.MethodOptions, origin, preflight)
		require.Less(t, resp.StatusCode, 300, origin)
		require.Equal(t, origin, resp.Header.Get("Access-Control-Allow-Origin"), origin)
		allowed := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers"))
		require.Contains(t, allowed, "authorization", origin)
		require.Contains(t, allowed, "content-type", origin)
		require.Contains(t, resp.Header.Get("Access-Control-Allow-Methods"), "POST", origin)
		require.Contains(t, strings.Join(resp.Header.Values("Vary"), ","), "Origin", origin)

		// The request itself (refused for want of a token, but readable by the page).
		resp = do(http.MethodPost, origin, map[string]string{"Content-Type": "application/json"})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		require.Equal(t, origin, resp.Header.Get("Access-Control-Allow-Origin"), origin)
	}

	for _, origin := range []string{"https://evil.example.net", "https://example.org", "http://ui.example.org", "http://app.example.com.evil.net", "http://app.example.com:3000", "null"} {
		resp := do(http.MethodOptions, origin, preflight)
		for k := range resp.Header {
			require.False(t, strings.HasPrefix(strings.ToLower(k), "access-control-"), "%s got %s", origin, k)
		}
		resp = do(http.MethodPost, origin, map[string]string{"Content-Type": "application/json"})
		for k := range resp.Header {
			require.False(t, strings.HasPrefix(strings.ToLower(k), "access-control-"), "%s got %s", origin, k)
		}
	}
}
