package server_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// newHandler returns the API's handler over an engine on SQLite, as an embedder builds it.
func newHandler(t *testing.T, configure func(*server.Config)) http.Handler {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	engine := engine.New(dbtest.Open(t, persistence.KindSQLite), engine.Options{Logger: log})
	cfg := server.Config{Engine: engine, Logger: log}
	if configure != nil {
		configure(&cfg)
	}
	return server.New(cfg)
}

// query posts a small query to h with a Host and an Origin header and returns the recorded answer.
func query(h http.Handler, host, origin string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(`{"query": "{ __typename }"}`))
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// An embedder that mounts the handler gets the Host check: a name the node is not known by (a DNS
// rebinding) is refused with 421 before anything runs, while IP addresses, localhost, the host of
// Addr and the allowed hosts are served.
func TestHandlerRefusesForeignHostNames(t *testing.T) {
	t.Parallel()
	h := newHandler(t, func(c *server.Config) {
		c.Addr = "cairn.internal:8080"
		c.AllowedHosts = []string{"*.example.com"}
		c.Routes = map[string]http.Handler{"GET /healthz": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})}
	})
	rec := query(h, "evil.example", "http://evil.example")
	require.Equal(t, http.StatusMisdirectedRequest, rec.Code)
	require.Contains(t, rec.Body.String(), "MISDIRECTED_REQUEST")
	for _, host := range []string{"127.0.0.1:8080", "[::1]:8080", "localhost:8080", "cairn.internal:8080", "api.example.com"} {
		rec := query(h, host, "")
		require.Equal(t, http.StatusOK, rec.Code, host)
		require.JSONEq(t, `{"data": {"__typename": "Query"}}`, rec.Body.String(), host)
	}
	// A route beside the API is behind the same check; the probes answer any host.
	probe := httptest.NewRequest(http.MethodGet, "/healthz", nil)
	probe.Host = "evil.example"
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, probe)
	require.Equal(t, http.StatusOK, rec.Code)
}

// An embedder's handler answers the pages of its allowed origins with CORS headers, and others
// with none.
func TestHandlerAllowsCORSForAllowedOriginsOnly(t *testing.T) {
	t.Parallel()
	h := newHandler(t, func(c *server.Config) { c.AllowedOrigins = []string{"app.example.com"} })
	rec := query(h, "127.0.0.1", "https://app.example.com")
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "https://app.example.com", rec.Header().Get("Access-Control-Allow-Origin"))
	rec = query(h, "127.0.0.1", "https://other.example.com")
	require.Empty(t, rec.Header().Get("Access-Control-Allow-Origin"))
}
