package server

import (
	"context"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cairnflow/cairn/workflow"
)

// DefaultRequestTimeout bounds a query or mutation request: a long poll's longest wait (60 s)
// plus room for the lease and the answer.
const DefaultRequestTimeout = 90 * time.Second

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
