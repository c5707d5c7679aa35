package graph

import (
	"context"
	"fmt"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cairnflow/cairn/graph/generated"
	"github.com/cairnflow/cairn/graph/model"
)

// depthLimit refuses operations that nest fields deeper than max. Introspection fields (__schema,
// __type) are not counted: GraphiQL's introspection query is deep by nature and cheap.
type depthLimit struct{ max int }

var (
	_ graphql.HandlerExtension        = depthLimit{}
	_ graphql.OperationContextMutator = depthLimit{}
)

// ExtensionName names the extension for gqlgen.
func (d depthLimit) ExtensionName() string { return "DepthLimit" }

// Validate checks the extension's configuration.
func (d depthLimit) Validate(graphql.ExecutableSchema) error {
	if d.max <= 0 {
		return fmt.Errorf("depth limit must be positive, not %d", d.max)
	}
	return nil
}

// MutateOperationContext measures the operation before it runs.
func (d depthLimit) MutateOperationContext(ctx context.Context, op *graphql.OperationContext) *gqlerror.Error {
	if op.Operation == nil {
		return nil
	}
	if depth := selectionDepth(op.Operation.SelectionSet, map[string]bool{}); depth > d.max {
		err := gqlerror.Errorf("the operation nests %d levels deep; at most %d are allowed", depth, d.max)
		err.Extensions = map[string]any{"code": codeDepthLimit}
		return err
	}
	return nil
}

// selectionDepth returns how many levels of fields a selection set nests, following fragments
// (visiting guards against fragment cycles, which validation rejects anyway).
func selectionDepth(set ast.SelectionSet, visiting map[string]bool) int {
	deepest := 0
	for _, sel := range set {
		d := 0
		switch s := sel.(type) {
		case *ast.Field:
			if strings.HasPrefix(s.Name, "__") {
				continue
			}
			d = 1 + selectionDepth(s.SelectionSet, visiting)
		case *ast.InlineFragment:
			d = selectionDepth(s.SelectionSet, visiting)
		case *ast.FragmentSpread:
			if s.Definition == nil || visiting[s.Name] {
				continue
			}
			visiting[s.Name] = true
			d = selectionDepth(s.Definition.SelectionSet, visiting)
			delete(visiting, s.Name)
		}
		deepest = max(deepest, d)
	}
	return deepest
}

// listCost is the assumed length of lists that are not paged (a workflow's side effects...).
const listCost = 10

// setComplexity makes lists cost their items' cost times their page size.
func setComplexity(c *generated.ComplexityRoot) {
	paged := func(child int, first, last *int) int { return 1 + child*max(pageSize(first, last), 1) }
	c.Query.Workflows = func(child int, _ *model.WorkflowFilter, _ *model.WorkflowOrder, first *int, _ *string, last *int, _ *string) int {
		return paged(child, first, last)
	}
	c.Query.Nodes = func(child int, ids []string) int { return 1 + child*max(len(ids), 1) }
	c.Query.Executors = func(child int) int { return 1 + child*listCost }
	c.Query.WorkflowDefinitions = func(child int, _ *string, _ *bool) int { return 1 + child*listCost }
	pagedArgs := func(child int, first *int, _ *string, last *int, _ *string) int { return paged(child, first, last) }
	c.Workflow.Children = pagedArgs
	c.Workflow.Actions = pagedArgs
	c.Workflow.TaskInstances = pagedArgs
	list := func(child int) int { return 1 + child*listCost }
	c.Workflow.SideEffects = list
	c.Workflow.Signals = list
	c.Workflow.ActivityLogs = list
	c.TaskInstance.ActivityLogs = list
	c.Executor.Workflows = list
	c.Action.VariableChanges = list
	c.WorkflowDefinition.States = list
	c.Mutation.StartWorkflows = func(child int, input model.StartWorkflowsInput) int {
		return 1 + child*max(len(input.Workflows), 1)
	}
}

// introspectionGuard refuses __schema and __type with a FORBIDDEN code when introspection is off
// (gqlgen's own refusal is an uncoded error). Use it after extension.Introspection.
type introspectionGuard struct{}

var (
	_ graphql.HandlerExtension        = introspectionGuard{}
	_ graphql.OperationContextMutator = introspectionGuard{}
)

// ExtensionName names the extension for gqlgen.
func (introspectionGuard) ExtensionName() string { return "IntrospectionGuard" }

// Validate checks the extension's configuration.
func (introspectionGuard) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationContext refuses an introspection query when introspection is off.
func (introspectionGuard) MutateOperationContext(_ context.Context, op *graphql.OperationContext) *gqlerror.Error {
	if op.Operation == nil || !op.DisableIntrospection || !introspects(op.Operation.SelectionSet, map[string]bool{}) {
		return nil
	}
	err := gqlerror.Errorf("introspection is disabled on this server")
	err.Extensions = map[string]any{"code": "FORBIDDEN"}
	return err
}

// introspects reports whether a selection set asks for __schema or __type anywhere.
func introspects(set ast.SelectionSet, visiting map[string]bool) bool {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			if s.Name == "__schema" || s.Name == "__type" || introspects(s.SelectionSet, visiting) {
				return true
			}
		case *ast.InlineFragment:
			if introspects(s.SelectionSet, visiting) {
				return true
			}
		case *ast.FragmentSpread:
			if s.Definition != nil && !visiting[s.Name] {
				visiting[s.Name] = true
				if introspects(s.Definition.SelectionSet, visiting) {
					return true
				}
			}
		}
	}
	return false
}
