package graph

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cairnflow/cairn/workflow"
)

// DefaultRequestTimeout bounds a query or mutation request: a long poll's longest wait (60 s)
// plus room for the lease and the answer.
const DefaultRequestTimeout = 90 * time.Second

// codeRequestTimeout is the code of a request cut by Config.RequestTimeout.
const codeRequestTimeout = "REQUEST_TIMEOUT"

// errRequestTimeout is the cause of a request context ended by Config.RequestTimeout.
var errRequestTimeout = errors.New("the request ran past the node's request timeout")

// withRequestTimeout bounds a plain request (a query or a mutation, not a stream) by d.
func withRequestTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, errRequestTimeout)
}

// timedOut reports whether a request's context ended because of its request timeout.
func timedOut(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errRequestTimeout)
}

// pollMargin is what a long poll leaves of its request's time for the lease and the answer.
const pollMargin = time.Second

// pollWaitWithin shortens a long poll's wait so that the poll answers (with no task) before its
// request's deadline instead of being cut by it. A wait out of range is left for the engine to
// refuse.
func pollWaitWithin(ctx context.Context, waitMs *int) *int {
	deadline, ok := ctx.Deadline()
	if !ok || waitMs == nil || *waitMs <= 0 || *waitMs > int(workflow.MaxPollWait/time.Millisecond) {
		return waitMs
	}
	left := int((time.Until(deadline) - pollMargin) / time.Millisecond)
	if *waitMs <= left {
		return waitMs
	}
	capped := max(left, 0)
	return &capped
}

// onePollPerRequest refuses an operation that selects pollTasks more than once: mutations run one
// after the other, so 100 aliased polls waiting 60 s each would hold one request for 100 minutes.
type onePollPerRequest struct{}

var (
	_ graphql.HandlerExtension        = onePollPerRequest{}
	_ graphql.OperationContextMutator = onePollPerRequest{}
)

// ExtensionName names the extension for gqlgen.
func (onePollPerRequest) ExtensionName() string { return "OnePollPerRequest" }

// Validate checks the extension's configuration.
func (onePollPerRequest) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationContext refuses a second pollTasks before anything runs.
func (onePollPerRequest) MutateOperationContext(_ context.Context, op *graphql.OperationContext) *gqlerror.Error {
	if op.Operation == nil || op.Operation.Operation != ast.Mutation {
		return nil
	}
	keys := map[string]bool{}
	rootFieldKeys(op.Operation.SelectionSet, "pollTasks", keys, map[string]bool{})
	if n := len(keys); n > 1 {
		err := limitError(string(workflow.CodeInvalidInput), "a request may hold one pollTasks, not %d: send each poll as its own request", n)
		err.Extensions["field"] = "pollTasks"
		return err
	}
	return nil
}

// rootFieldKeys collects the response keys (alias or name) under which a root field is selected,
// through fragments: selections with one key run once, whatever their number.
func rootFieldKeys(set ast.SelectionSet, name string, keys, seen map[string]bool) {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			if s.Name == name {
				keys[cmpOr(s.Alias, s.Name)] = true
			}
		case *ast.InlineFragment:
			rootFieldKeys(s.SelectionSet, name, keys, seen)
		case *ast.FragmentSpread:
			if s.Definition != nil && !seen[s.Name] {
				seen[s.Name] = true
				rootFieldKeys(s.Definition.SelectionSet, name, keys, seen)
			}
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// requestTimeoutError is what a field cut by the request timeout answers.
func requestTimeoutError(d time.Duration) *gqlerror.Error {
	return limitError(codeRequestTimeout, "%s", fmt.Sprintf("the request ran longer than this node's request timeout (%s)", d))
}
