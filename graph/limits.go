package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cairnflow/cairn/graph/generated"
	"github.com/cairnflow/cairn/graph/model"
)

// listCost is the assumed length of lists that are not paged (a workflow's side effects...).
const listCost = 10

// setComplexity prices the fields that cost more than 1 plus their children: lists that are not
// paged cost their items' cost times their expected length, and fields that scan many rows cost
// what costLimit's constants say. Connections are priced by costLimit itself (page size times
// their items).
func setComplexity(c *generated.ComplexityRoot) {
	c.Query.Nodes = func(child int, ids []string) int { return 1 + child*max(len(ids), 1) }
	c.Query.Executors = func(child int, _ *int, _ *string, _ *bool) int { return 1 + child*listCost }
	c.Query.WorkflowDefinitions = func(child int, _ *string, _ *bool) int { return 1 + child*listCost }
	c.Query.WorkflowStats = func(int, *model.WorkflowFilter) int { return CostWorkflowStats }
	c.WorkflowConnection.TotalCount = func(int) int { return CostWorkflowTotalCount }
	// The flag runs the same count (once per connection, whichever asks first).
	c.WorkflowConnection.TotalCountIsEstimate = func(int) int { return CostWorkflowTotalCount }
	c.ActionConnection.TotalCount = func(int) int { return CostHistoryTotalCount }
	c.TaskInstanceConnection.TotalCount = func(int) int { return CostHistoryTotalCount }
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
