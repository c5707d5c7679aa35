package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cairnflow/cairn/graph/internal/request"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// Error codes of the API besides the engine's (workflow.Code).
const (
	// codeSlowSubscriber ends a subscription that could not keep up; extensions.cursor says where
	// to resume.
	codeSlowSubscriber = "SLOW_SUBSCRIBER"
	// codeCursorExpired refuses to resume from a cursor older than the change events kept;
	// extensions.oldestCursor says where the events held begin.
	codeCursorExpired = "CURSOR_EXPIRED"
)

// errorPresenter turns a resolver's error into what the client sees: the engine's code and field in
// extensions, and for anything unexpected a masked INTERNAL error, logged with its cause. Errors
// gqlgen already coded (parse, validation, complexity) pass unchanged.
func errorPresenter(log *slog.Logger, requestTimeout time.Duration) graphql.ErrorPresenterFunc {
	return func(ctx context.Context, err error) *gqlerror.Error {
		if request.TimedOut(ctx) && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
			out := request.TimeoutError(requestTimeout)
			out.Path = graphql.GetPath(ctx)
			return out
		}
		if b := budgetOf(ctx); b != nil && budgetCut(ctx, err) {
			out := b.error()
			out.Path = graphql.GetPath(ctx)
			return out
		}
		out := graphql.DefaultErrorPresenter(ctx, err)
		if _, coded := out.Extensions["code"]; coded {
			if f := variableFieldOf(out); f != "" {
				out.Extensions["field"] = f // a variable's value the schema refused (an unknown enum value...)
			}
			return out
		}
		var we *workflow.Error
		switch {
		case errors.As(err, &we) && we.Code != workflow.CodeInternal:
			out.Message = we.MessageNaming(refID)
			out.Extensions = map[string]any{"code": string(we.Code)}
			if we.Field != "" {
				out.Extensions["field"] = we.Field
			} else if f := inputFieldOf(ctx, out.Path); f != "" {
				out.Extensions["field"] = f // a scalar refused an argument's value
			}
		case errors.Is(err, persistence.ErrNotFound):
			out.Message = "not found"
			out.Extensions = map[string]any{"code": string(workflow.CodeNotFound)}
		case errors.Is(err, persistence.ErrConflict):
			out.Message = "the change collides with a concurrent one; read again and retry"
			out.Extensions = map[string]any{"code": string(workflow.CodeConflict)}
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			out.Message = "the request was cancelled or timed out"
			out.Extensions = map[string]any{"code": string(workflow.CodeInternal)}
		default:
			if !errors.As(err, &we) { // a masked panic was logged where it was recovered
				log.ErrorContext(ctx, "internal error in GraphQL request", "path", out.Path.String(), "error", err)
			}
			out.Message = "internal error"
			out.Extensions = map[string]any{"code": string(workflow.CodeInternal)}
		}
		out.Err = nil
		return out
	}
}

// variableFieldOf names the input field of a variable's value the schema refused, from the error's
// path (variable, the variable's name, then the fields and list indexes below it): "role",
// "filter.statuses[1]". "" for any other error, and for a variable refused as a whole.
func variableFieldOf(e *gqlerror.Error) string {
	if len(e.Path) < 3 || e.Path[0] != ast.PathName("variable") {
		return ""
	}
	var b strings.Builder
	for _, el := range e.Path[2:] {
		switch el := el.(type) {
		case ast.PathName:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(string(el))
		case ast.PathIndex:
			fmt.Fprintf(&b, "[%d]", int(el))
		}
	}
	return b.String()
}

// refID names an object in an engine's error message by its opaque ID, never its row number.
func refID(r workflow.Ref) string { return encodeID(r.Kind, r.ID) }

// recoverFunc turns a resolver's panic into a masked INTERNAL error, logged with its stack.
func recoverFunc(log *slog.Logger) graphql.RecoverFunc {
	return func(ctx context.Context, p any) error {
		log.ErrorContext(ctx, "panic in GraphQL resolver", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		return &workflow.Error{Code: workflow.CodeInternal, Message: "internal error"}
	}
}
