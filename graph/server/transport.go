package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/cairnflow/cairn/graph/internal/request"
)

// Error codes of requests refused before they reach GraphQL: the HTTP request itself is wrong.
const (
	// codeBadRequest: the body is not a GraphQL request (not JSON, not an object, a batch, a
	// field of the wrong JSON type, nested too deeply, empty).
	codeBadRequest = "BAD_REQUEST"
	// codeMethodNotAllowed: a method other than GET, POST and OPTIONS, or a mutation or
	// subscription sent by GET (405, with an Allow header).
	codeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	// codeUnsupportedMediaType: a POST whose Content-Type is not application/json (415).
	codeUnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE"
	// codeRequestTooLarge: a body over Config.MaxBodyBytes, declared or streamed (413).
	codeRequestTooLarge = "REQUEST_TOO_LARGE"
)

func init() {
	errcode.RegisterErrorType(codeBadRequest, errcode.KindProtocol)
}

// guardRequests answers what gqlgen's transports would refuse without a code, or would take as
// an internal error, with a client error and a code: a wrong method or media type, a body that is
// not one GraphQL request, a mutation by GET, and a body over max (also when it is chunked). Such
// refusals are logged at debug level as one short line, never with the body. Websocket upgrades
// pass untouched.
func guardRequests(next http.Handler, cfg Config, log *slog.Logger) http.Handler {
	maxBody, tokenLimit := cfg.MaxBodyBytes, cfg.ParserTokenLimit
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" {
			next.ServeHTTP(w, r)
			return
		}
		refuse := func(status int, code, format string, args ...any) {
			msg := fmt.Sprintf(format, args...)
			log.DebugContext(r.Context(), "refused a GraphQL request", "method", r.Method, "status", status, "code", code, "reason", msg)
			writeError(w, status, code, msg)
		}
		switch r.Method {
		case http.MethodOptions:
			next.ServeHTTP(w, r)
		case http.MethodGet:
			if reason := checkGetParams(r); reason != "" {
				refuse(http.StatusBadRequest, codeBadRequest, "%s", reason)
				return
			}
			kind := getOperationKind(r, tokenLimit)
			if kind == ast.Subscription && strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
				// A browser's EventSource: the read timeout must not end the stream.
				_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
				next.ServeHTTP(w, r)
				return
			}
			if kind != "" && kind != ast.Query {
				w.Header().Set("Allow", "POST")
				refuse(http.StatusMethodNotAllowed, codeMethodNotAllowed, "a %s must be sent by POST, not GET", kind)
				return
			}
			ctx, cancel := request.WithTimeout(r.Context(), cfg.RequestTimeout)
			defer cancel()
			next.ServeHTTP(w, r.WithContext(ctx))
		case http.MethodPost:
			mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if err != nil || mediaType != "application/json" {
				refuse(http.StatusUnsupportedMediaType, codeUnsupportedMediaType,
					"send the request as Content-Type: application/json, not %q", r.Header.Get("Content-Type"))
				return
			}
			body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
			if err != nil {
				var tooLarge *http.MaxBytesError
				if errors.As(err, &tooLarge) {
					refuse(http.StatusRequestEntityTooLarge, codeRequestTooLarge, "the request body is over %d bytes", maxBody)
					return
				}
				refuse(http.StatusBadRequest, codeBadRequest, "the request body could not be read")
				return
			}
			if int64(len(body)) > maxBody {
				refuse(http.StatusRequestEntityTooLarge, codeRequestTooLarge, "the request body is over %d bytes", maxBody)
				return
			}
			if reason := checkRequestBody(body); reason != "" {
				refuse(http.StatusBadRequest, codeBadRequest, "%s", reason)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
				// The request is read: the server's read timeout must not end the stream.
				_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
			} else {
				ctx, cancel := request.WithTimeout(context.WithValue(r.Context(), plainRequestKey{}, true), cfg.RequestTimeout)
				defer cancel()
				r = r.WithContext(ctx)
			}
			next.ServeHTTP(w, r)
		default:
			w.Header().Set("Allow", "GET, POST, OPTIONS")
			refuse(http.StatusMethodNotAllowed, codeMethodNotAllowed, "method %s is not allowed: use POST (or GET for queries)", r.Method)
		}
	})
}

type plainRequestKey struct{}

// noPlainSubscriptions refuses a subscription sent as a plain POST (neither a websocket nor
// Server-Sent Events): gqlgen would hold the request open until the first event, then answer
// only that one.
type noPlainSubscriptions struct{}

var (
	_ graphql.HandlerExtension        = noPlainSubscriptions{}
	_ graphql.OperationContextMutator = noPlainSubscriptions{}
)

// ExtensionName names the extension for gqlgen.
func (noPlainSubscriptions) ExtensionName() string { return "NoPlainSubscriptions" }

// Validate checks the extension's configuration.
func (noPlainSubscriptions) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationContext refuses a subscription on a plain POST.
func (noPlainSubscriptions) MutateOperationContext(ctx context.Context, op *graphql.OperationContext) *gqlerror.Error {
	if plain, _ := ctx.Value(plainRequestKey{}).(bool); !plain || op.Operation == nil || op.Operation.Operation != ast.Subscription {
		return nil
	}
	return limitError(codeBadRequest, "a subscription needs a websocket (graphql-transport-ws) or Server-Sent Events (Accept: text/event-stream)")
}

// requestFields are the members of a GraphQL request body, kept raw to check their JSON types.
type requestFields struct {
	Query         json.RawMessage `json:"query"`
	OperationName json.RawMessage `json:"operationName"`
	Variables     json.RawMessage `json:"variables"`
	Extensions    json.RawMessage `json:"extensions"`
}

// checkRequestBody returns why a POST body is not one GraphQL request, or "".
func checkRequestBody(body []byte) string {
	trimmed := bytes.TrimSpace(body)
	switch {
	case len(trimmed) == 0:
		return "the request body is empty; send a JSON object with a query"
	case trimmed[0] == '[':
		return "batched requests (a JSON array) are not supported; send one JSON object"
	case trimmed[0] != '{':
		return "the request body must be a JSON object with a query"
	}
	var f requestFields
	if err := json.Unmarshal(trimmed, &f); err != nil {
		return "the request body is not valid JSON: " + shorten(err.Error())
	}
	switch {
	case !isJSON(f.Query, '"'):
		return "query must be a string"
	case !isJSON(f.OperationName, '"'):
		return "operationName must be a string or null"
	case !isJSON(f.Variables, '{'):
		return "variables must be an object or null"
	case !isJSON(f.Extensions, '{'):
		return "extensions must be an object or null"
	case len(f.Query) == 0 || string(f.Query) == "null" || string(f.Query) == `""`:
		// Not a GraphQL request at all: 400, as GraphQL over HTTP asks, rather than a 200 with an error.
		return missingQuery
	}
	return ""
}

const missingQuery = "the request has no query; send a JSON object with a query string"

// isJSON reports whether a raw member is absent, null, or starts like the wanted JSON type.
func isJSON(raw json.RawMessage, first byte) bool {
	return len(raw) == 0 || string(raw) == "null" || raw[0] == first
}

// checkGetParams returns why a GET request's parameters are not one GraphQL request, or "".
func checkGetParams(r *http.Request) string {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return "the query string does not parse: " + shorten(err.Error())
	}
	if q.Get("query") == "" {
		return missingQuery
	}
	for _, name := range []string{"variables", "extensions"} {
		if v := q.Get(name); v != "" {
			var m map[string]any
			if json.Unmarshal([]byte(v), &m) != nil {
				return name + " must be a JSON object"
			}
		}
	}
	return ""
}

// getOperationKind returns the kind of the operation a GET request names ("" when its query does
// not parse or names no operation: gqlgen reports that).
func getOperationKind(r *http.Request, tokenLimit int) ast.Operation {
	q := r.URL.Query()
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: q.Get("query")}, tokenLimit)
	if err != nil || doc == nil {
		return ""
	}
	name := q.Get("operationName")
	if name == "" && len(doc.Operations) != 1 {
		return ""
	}
	if op := doc.Operations.ForName(name); op != nil {
		return op.Operation
	}
	return ""
}

// writeError writes one GraphQL error with a code as the whole response.
func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]any{{
		"message": message, "extensions": map[string]any{"code": code}}}})
}

// shorten keeps an error message to one short line.
func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}
