package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// FuzzGraphQLHandler sends arbitrary bodies (POST) or query strings (GET) to the GraphQL endpoint
// on a real SQLite database: it never panics, never answers 5xx, and every error it answers with
// carries extensions.code. The seed corpus is in testdata/fuzz/FuzzGraphQLHandler; run it longer
// with go test -fuzz FuzzGraphQLHandler -fuzztime 1m ./graph/server.
func FuzzGraphQLHandler(f *testing.F) {
	store := dbtest.Open(f, persistence.KindSQLite)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	engine := engine.New(store, engine.Options{Logger: log})
	if _, err := engine.Register(context.Background(), testFlow); err != nil {
		f.Fatal(err)
	}
	h := server.New(server.Config{Engine: engine, Logger: log, Introspection: true, AllowedHosts: testHosts})
	f.Add([]byte(`{"query": "{ workflows(first: 2) { totalCount nodes { id status } } }"}`), false)
	f.Add([]byte(`{ executors { id } }`), true)
	f.Fuzz(func(t *testing.T, input []byte, get bool) {
		var req *http.Request
		if get {
			req = httptest.NewRequest(http.MethodGet, "/graphql?query="+url.QueryEscape(string(input)), nil)
		} else {
			req = httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(input))
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("status %d for %q: %s", rec.Code, input, rec.Body)
		}
		var resp struct {
			Errors []struct {
				Message    string         `json:"message"`
				Extensions map[string]any `json:"extensions"`
			} `json:"errors"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
			t.Fatalf("status %d, a body that is not JSON for %q: %s", rec.Code, input, rec.Body)
		}
		for _, e := range resp.Errors {
			if code, _ := e.Extensions["code"].(string); code == "" || code == "INTERNAL" {
				t.Fatalf("status %d, error %q with code %q for %q", rec.Code, e.Message, code, input)
			}
		}
	})
}
