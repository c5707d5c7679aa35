package model

import (
	"context"
	"sync"

	"github.com/cairnflow/cairn/persistence"
)

// Counter returns the total number of items a connection pages through; it runs only when a client
// asks for totalCount.
type Counter func(ctx context.Context) (int, error)

// nodesOf returns the nodes of a page's edges, in order.
func nodesOf[E, N any](edges []E, node func(E) N) []N {
	out := make([]N, len(edges))
	for i, e := range edges {
		out[i] = node(e)
	}
	return out
}

// WorkflowConnection is a page of workflows.
type WorkflowConnection struct {
	Edges    []*WorkflowEdge
	PageInfo *PageInfo
	// Count counts the workflows, exactly or as an estimate; it runs once, when a client asks for
	// totalCount or totalCountIsEstimate.
	Count func(ctx context.Context) (persistence.Count, error)

	once    sync.Once
	counted persistence.Count
	err     error
}

func (c *WorkflowConnection) count(ctx context.Context) (persistence.Count, error) {
	c.once.Do(func() { c.counted, c.err = c.Count(ctx) })
	return c.counted, c.err
}

// Nodes returns the workflows of the page.
func (c *WorkflowConnection) Nodes() []*persistence.Workflow {
	return nodesOf(c.Edges, func(e *WorkflowEdge) *persistence.Workflow { return e.Node })
}

// TotalCount counts the workflows the connection pages through.
func (c *WorkflowConnection) TotalCount(ctx context.Context) (int, error) {
	n, err := c.count(ctx)
	return n.N, err
}

// TotalCountIsEstimate reports whether TotalCount is an estimate.
func (c *WorkflowConnection) TotalCountIsEstimate(ctx context.Context) (bool, error) {
	n, err := c.count(ctx)
	return n.Estimate, err
}

// WorkflowEdge is a workflow with its cursor.
type WorkflowEdge struct {
	Cursor string
	Node   *persistence.Workflow
}

// ActionConnection is a page of a workflow's actions.
type ActionConnection struct {
	Edges    []*ActionEdge
	PageInfo *PageInfo
	Count    Counter
}

// Nodes returns the actions of the page.
func (c *ActionConnection) Nodes() []*persistence.Action {
	return nodesOf(c.Edges, func(e *ActionEdge) *persistence.Action { return e.Node })
}

// TotalCount counts the workflow's actions.
func (c *ActionConnection) TotalCount(ctx context.Context) (int, error) { return c.Count(ctx) }

// ActionEdge is an action with its cursor.
type ActionEdge struct {
	Cursor string
	Node   *persistence.Action
}

// TaskInstanceConnection is a page of a workflow's task instances.
type TaskInstanceConnection struct {
	Edges    []*TaskInstanceEdge
	PageInfo *PageInfo
	Count    Counter
}

// Nodes returns the task instances of the page.
func (c *TaskInstanceConnection) Nodes() []*persistence.TaskInstance {
	return nodesOf(c.Edges, func(e *TaskInstanceEdge) *persistence.TaskInstance { return e.Node })
}

// TotalCount counts the workflow's task instances.
func (c *TaskInstanceConnection) TotalCount(ctx context.Context) (int, error) { return c.Count(ctx) }

// TaskInstanceEdge is a task instance with its cursor.
type TaskInstanceEdge struct {
	Cursor string
	Node   *persistence.TaskInstance
}
