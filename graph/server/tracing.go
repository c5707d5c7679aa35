package server

import (
	"context"
	"net/http"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairnflow/cairn/internal/tracing"
)

// traceRequests makes a request's W3C traceparent header (if any) the remote parent of what it
// does: its operation's span, and the workflows it starts, whose steps join that trace.
func traceRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("traceparent") != "" {
			r = r.WithContext(tracing.Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
		}
		next.ServeHTTP(w, r)
	})
}

// operationSpans records a span per GraphQL operation while tracing is on (a subscription's span
// lasts as long as its stream).
type operationSpans struct{}

var (
	_ graphql.HandlerExtension     = operationSpans{}
	_ graphql.OperationInterceptor = operationSpans{}
)

func (operationSpans) ExtensionName() string                   { return "OperationSpans" }
func (operationSpans) Validate(graphql.ExecutableSchema) error { return nil }
func (operationSpans) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	if !tracing.Enabled() {
		return next(ctx)
	}
	oc := graphql.GetOperationContext(ctx)
	kind, name := "query", oc.OperationName
	if oc.Operation != nil {
		kind = string(oc.Operation.Operation)
		if name == "" {
			name = oc.Operation.Name
		}
	}
	spanName := "graphql." + kind
	if name != "" {
		spanName += " " + name
	}
	ctx, span := tracing.Tracer().Start(ctx, spanName, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("graphql.operation.type", kind), attribute.String("graphql.operation.name", name)))
	handler := next(ctx)
	stream := oc.Operation != nil && oc.Operation.Operation == ast.Subscription
	ended := false
	return func(ctx context.Context) *graphql.Response {
		resp := handler(trace.ContextWithSpan(ctx, span))
		if ended {
			return resp
		}
		if resp != nil && len(resp.Errors) > 0 {
			span.SetStatus(codes.Error, resp.Errors[0].Message)
		}
		if !stream || resp == nil {
			ended = true
			span.End()
		}
		return resp
	}
}
