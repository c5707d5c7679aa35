package graphiql_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph/graphiql"
)

func get(t *testing.T, srv *httptest.Server, path string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

// TestPageLoadsEverythingFromTheBinary checks that the page and every script and stylesheet it
// names come from the server itself (no CDN: the page works offline), and that subscriptions are
// wired to graphql-ws.
func TestPageLoadsEverythingFromTheBinary(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(graphiql.Handler())
	t.Cleanup(srv.Close)

	resp, page := get(t, srv, "/")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/html")
	require.Contains(t, page, "GraphiQL")
	refs := regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllStringSubmatch(page, -1)
	require.Len(t, refs, 6, "five scripts and a stylesheet")
	for _, ref := range refs {
		u := ref[1]
		require.False(t, strings.Contains(u, "//"), "%s must be served by cairn", u)
		resp, body := get(t, srv, "/"+u)
		require.Equal(t, http.StatusOK, resp.StatusCode, u)
		require.NotEmpty(t, body, u)
		if strings.HasSuffix(u, ".js") {
			require.Contains(t, resp.Header.Get("Content-Type"), "javascript", u)
		} else {
			require.Contains(t, resp.Header.Get("Content-Type"), "text/css", u)
		}
		for _, cdn := range []string{"//unpkg.com", "//cdn.jsdelivr.net", "//cdnjs.cloudflare.com", "//esm.sh"} {
			require.False(t, strings.Contains(body, cdn), "%s loads from %s", u, cdn)
		}
	}
	_, start := get(t, srv, "/graphiql/start.js")
	require.Contains(t, start, "graphqlWs.createClient")
	require.Contains(t, start, "wsClient: wsClient")

	resp, _ = get(t, srv, "/graphiql/nope.js")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}
