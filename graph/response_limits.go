package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// codeResponseTooLarge is the code of the fields cut by Config.MaxResponseBytes.
const codeResponseTooLarge = "RESPONSE_TOO_LARGE"

func init() {
	errcode.RegisterErrorType(codeResponseTooLarge, errcode.KindUser)
}

// errResponseTooLarge is the cause of a response context ended by its byte budget.
var errResponseTooLarge = errors.New("the response is over the node's response size limit")

// responseBudget counts the bytes of the values a response's fields resolve to, as they resolve,
// so that a response past the limit stops growing while it is built rather than after: the cost
// limit prices fields, not the size of the JSON they hold (a 5,000-cost query returned 550 MB).
type responseBudget struct {
	max    int64
	used   atomic.Int64
	cancel context.CancelCauseFunc
}

type responseBudgetKey struct{}

func budgetOf(ctx context.Context) *responseBudget {
	b, _ := ctx.Value(responseBudgetKey{}).(*responseBudget)
	return b
}

// add counts n bytes and reports whether the response is still within its limit; the first
// call past it cancels the response's context, so that fields still loading stop.
func (b *responseBudget) add(n int64) bool {
	if b.used.Add(n) <= b.max {
		return true
	}
	b.cancel(errResponseTooLarge)
	return false
}

func (b *responseBudget) exceeded() bool { return b.used.Load() > b.max }

func (b *responseBudget) error() *gqlerror.Error {
	err := gqlerror.Errorf("the response is over %d bytes; ask for fewer items or fields (a smaller first:, or no JSON fields)", b.max)
	err.Extensions = map[string]any{"code": codeResponseTooLarge}
	err.Err = errResponseTooLarge
	return err
}

// boundResponses gives every response (a query, a mutation, one event of a subscription) a
// budget of max bytes, and makes every field count its value against it.
func boundResponses(srv *handler.Server, max int64) {
	srv.AroundResponses(func(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		b := &responseBudget{max: max, cancel: cancel}
		resp := next(context.WithValue(ctx, responseBudgetKey{}, b))
		if resp == nil || !b.exceeded() {
			return resp
		}
		// A response cut anywhere is one error, not its partial data and one error per field cut.
		err := b.error()
		err.Err = nil
		if graphql.HasOperationContext(ctx) && isMutation(graphql.GetOperationContext(ctx)) {
			// Its changes are made: say so, lest the client run it again.
			err.Message = fmt.Sprintf("the mutation ran, but its answer is over %d bytes; read what it changed with a query asking for fewer fields", b.max)
		}
		return &graphql.Response{Errors: gqlerror.List{err}, Extensions: resp.Extensions}
	})
	srv.AroundFields(func(ctx context.Context, next graphql.Resolver) (any, error) {
		b := budgetOf(ctx)
		if b == nil {
			return next(ctx)
		}
		if b.exceeded() {
			return nil, b.error()
		}
		res, err := next(ctx)
		if b.exceeded() {
			return nil, b.error()
		}
		if err != nil {
			return res, err
		}
		if !b.add(sizeOf(res)) {
			return nil, b.error()
		}
		return res, nil
	})
}

func isMutation(oc *graphql.OperationContext) bool {
	return oc.Operation != nil && oc.Operation.Operation == ast.Mutation
}

// budgetCut reports whether an error comes from a field cut short by its response's budget.
func budgetCut(ctx context.Context, err error) bool {
	return errors.Is(context.Cause(ctx), errResponseTooLarge) && (errors.Is(err, context.Canceled) || errors.Is(err, errResponseTooLarge))
}

// sizeOf is about what a field's value adds to the JSON response: its bytes for text and JSON,
// a few bytes for anything else (the fields of an object count themselves).
func sizeOf(v any) int64 {
	const small = 8
	switch x := v.(type) {
	case nil:
		return small
	case json.RawMessage:
		return int64(len(x)) + small
	case []byte:
		return int64(len(x)) + small
	case string:
		return int64(len(x)) + small
	case *string:
		if x != nil {
			return int64(len(*x)) + small
		}
		return small
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice {
		return int64(rv.Len())*small + small
	}
	return small
}
