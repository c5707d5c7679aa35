package server

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"strings"
)

// graphqlResponseJSON is the media type of the GraphQL-over-HTTP specification's responses.
const graphqlResponseJSON = "application/graphql-response+json"

// conformStatus makes the answers to GraphQL request errors (a document that does not parse or
// validate, variables that do not fit, a limit on the document) follow the GraphQL-over-HTTP
// specification, which gqlgen does not quite: a client that accepts only application/json gets
// 200 and the errors (a legacy client reads the body, not the status), and a client that asks for
// application/graphql-response+json gets 4xx and a body with no "data" entry (the request never
// executed). Websockets and event streams pass untouched.
func conformStatus(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" || strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
			next.ServeHTTP(w, r)
			return
		}
		cw := &conformingWriter{ResponseWriter: w}
		next.ServeHTTP(cw, r)
		cw.finish()
	})
}

// conformingWriter rewrites the status and body of a request error as conformStatus says.
type conformingWriter struct {
	http.ResponseWriter
	wroteHeader bool
	// held buffers the body of a graphql-response+json request error, to drop its "data".
	held *bytes.Buffer
}

func (w *conformingWriter) mediaType() string {
	mt, _, _ := mime.ParseMediaType(w.Header().Get("Content-Type"))
	return mt
}

func (w *conformingWriter) WriteHeader(status int) {
	if w.wroteHeader {
		return
	}
	w.wroteHeader = true
	switch {
	case status == http.StatusUnprocessableEntity && w.mediaType() == "application/json":
		status = http.StatusOK
	case status >= 400 && status < 500 && w.mediaType() == graphqlResponseJSON:
		w.held = &bytes.Buffer{}
		w.Header().Del("Content-Length")
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *conformingWriter) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.held != nil {
		return w.held.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

// finish writes a held body without its "data" entry.
func (w *conformingWriter) finish() {
	if w.held == nil {
		return
	}
	body := w.held.Bytes()
	var resp map[string]json.RawMessage
	if json.Unmarshal(body, &resp) == nil {
		if _, ok := resp["data"]; ok {
			delete(resp, "data")
			if out, err := json.Marshal(resp); err == nil {
				body = append(out, '\n')
			}
		}
	}
	_, _ = w.ResponseWriter.Write(body)
}

// Flush passes on to the underlying writer (held bodies are written at the end anyway).
func (w *conformingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && w.held == nil {
		f.Flush()
	}
}
