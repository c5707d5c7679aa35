package server

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/cairnflow/cairn/graph"
	"github.com/cairnflow/cairn/persistence"
)

// The headers of read-your-writes: a mutation's response carries the primary's WAL position in
// ConsistencyHeader; a request sending it back is read from a replica only once the replica has
// replayed that far (else from the primary). ReadSourceHeader says which served a response.
const (
	ConsistencyHeader = "Cairn-Consistency-Token"
	ReadSourceHeader  = "Cairn-Read-Source"
)

// routeReads gives each request a graph.ReadRoute (from its consistency token) and writes what
// the executor decided as headers before the response's first byte. A token that is not a WAL
// position is INVALID_INPUT.
func routeReads(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" { // a websocket: subscriptions read the primary
			next.ServeHTTP(w, r)
			return
		}
		rt := &graph.ReadRoute{}
		if token := r.Header.Get(ConsistencyHeader); token != "" {
			pos, err := persistence.ParseWALPosition(token)
			if err != nil {
				writeFieldError(w, http.StatusBadRequest, "INVALID_INPUT", ConsistencyHeader,
					fmt.Sprintf("the %s header must be a token a mutation's response carried: %v", ConsistencyHeader, err))
				return
			}
			rt.After = pos
		}
		next.ServeHTTP(&routeWriter{ResponseWriter: w, route: rt}, r.WithContext(graph.WithReadRoute(r.Context(), rt)))
	})
}

// routeWriter sets the route's headers when the response starts.
type routeWriter struct {
	http.ResponseWriter
	route   *graph.ReadRoute
	written bool
}

func (w *routeWriter) headers() {
	if w.written {
		return
	}
	w.written = true
	if w.route.Source != "" {
		w.Header().Set(ReadSourceHeader, w.route.Source)
	}
	if w.route.Token != "" {
		w.Header().Set(ConsistencyHeader, w.route.Token)
	}
}

func (w *routeWriter) WriteHeader(status int) {
	w.headers()
	w.ResponseWriter.WriteHeader(status)
}

func (w *routeWriter) Write(b []byte) (int, error) {
	w.headers()
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushes, deadlines, hijacks).
func (w *routeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush passes flushes through (SSE).
func (w *routeWriter) Flush() {
	w.headers()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// writeFieldError writes one GraphQL error with a code and the input field at fault.
func writeFieldError(w http.ResponseWriter, status int, code, field, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]any{{
		"message": message, "extensions": map[string]any{"code": code, "field": field}}}})
}
