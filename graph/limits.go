package graph

import (
	"github.com/cairnflow/cairn/graph/generated"
	"github.com/cairnflow/cairn/graph/model"
)

// Costs of the fields that scan many rows, in the units of the HTTP server's complexity limit
// (server.Config.ComplexityLimit; a plain field costs 1). They make a query cost what it costs the database: with the default limit of 50000, a
// query may ask for at most 10 workflowStats or 25 totalCounts of workflows.
const (
	// CostWorkflowStats is the cost of Query.workflowStats: it groups every workflow that matches.
	CostWorkflowStats = 5000
	// CostWorkflowTotalCount is the cost of WorkflowConnection.totalCount: it counts every
	// workflow that matches the filter (or every child of a workflow).
	CostWorkflowTotalCount = 2000
	// CostHistoryTotalCount is the cost of totalCount on a workflow's actions and task
	// instances: an index range of one workflow.
	CostHistoryTotalCount = 20
)

// listCost is the assumed length of lists that are not paged (a workflow's side effects...).
const listCost = 10

// setComplexity prices the fields that cost more than 1 plus their children: lists that are not
// paged cost their items' cost times their expected length, and fields that scan many rows cost
// what the Cost constants say. Connections are priced by the HTTP server's cost limit itself (page size times
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
	c.Query.BulkOperations = func(child int, _ *int, _ *string) int { return 1 + child*listCost }
	c.BulkOperation.Failures = func(child int, first *int, _ *string) int {
		n := 50
		if first != nil {
			n = *first
		}
		return 1 + child*max(n, 1)
	}
	c.Mutation.StartWorkflows = func(child int, input model.StartWorkflowsInput) int {
		return 1 + child*max(len(input.Workflows), 1)
	}
}
