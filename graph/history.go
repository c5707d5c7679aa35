package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/cairnflow/cairn/graph/model"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// actionConnection reads one page of a workflow's actions through the loaders.
func (r *Resolver) actionConnection(ctx context.Context, w *persistence.Workflow, first, last *int, after, before *string) (*model.ActionConnection, error) {
	p, err := parsePage(first, last, after, before)
	if err != nil {
		return nil, err
	}
	page, err := rowPage(kindAction, p)
	if err != nil {
		return nil, err
	}
	l := loadersFor(ctx, r.reads(ctx))
	rows, err := l.actions.Load(ctx, pageKey{WorkflowID: w.ID, Page: page})()
	if err != nil {
		return nil, err
	}
	rows, info := cutPage(rows, p)
	conn := &model.ActionConnection{PageInfo: info, Edges: make([]*model.ActionEdge, len(rows)),
		Count: func(ctx context.Context) (int, error) { return l.actionCounts.Load(ctx, w.ID)() }}
	cursors := make([]string, len(rows))
	for i, a := range rows {
		cursors[i] = rowCursorOf(kindAction, a.ID)
		conn.Edges[i] = &model.ActionEdge{Cursor: cursors[i], Node: a}
	}
	setEnds(info, cursors)
	return conn, nil
}

// taskInstanceConnection reads one page of a workflow's task instances through the loaders.
func (r *Resolver) taskInstanceConnection(ctx context.Context, w *persistence.Workflow, first, last *int, after, before *string) (*model.TaskInstanceConnection, error) {
	p, err := parsePage(first, last, after, before)
	if err != nil {
		return nil, err
	}
	page, err := rowPage(kindTaskInstance, p)
	if err != nil {
		return nil, err
	}
	l := loadersFor(ctx, r.reads(ctx))
	rows, err := l.taskInstances.Load(ctx, pageKey{WorkflowID: w.ID, Page: page})()
	if err != nil {
		return nil, err
	}
	running, err := r.runningAttempt(ctx, l, w)
	if err != nil {
		return nil, err
	}
	if running != nil {
		rows = withRunning(rows, running, p, page)
	}
	rows, info := cutPage(rows, p)
	conn := &model.TaskInstanceConnection{PageInfo: info, Edges: make([]*model.TaskInstanceEdge, len(rows)),
		Count: func(ctx context.Context) (int, error) {
			n, err := l.taskCounts.Load(ctx, w.ID)()
			if running != nil {
				n++
			}
			return n, err
		}}
	cursors := make([]string, len(rows))
	for i, t := range rows {
		cursors[i] = taskInstanceCursor(t)
		conn.Edges[i] = &model.TaskInstanceEdge{Cursor: cursors[i], Node: t}
	}
	setEnds(info, cursors)
	return conn, nil
}

// kindRunningTask names the ID of a running attempt: it has no row yet (one is written when it
// ends), so its ID is made from its workflow's, which it alone holds while it runs.
const kindRunningTask = "RunningTaskInstance"

// runningID is where a running attempt sorts among its workflow's task instances: after all of them.
const runningID = math.MaxInt64

// taskInstanceID is the opaque ID of a task instance, stored or running.
func taskInstanceID(t *persistence.TaskInstance) string {
	if t.ID == 0 {
		return encodeID(kindRunningTask, t.WorkflowID)
	}
	return encodeID(kindTaskInstance, t.ID)
}

// taskInstanceCursor is the cursor of a task instance in its workflow's list.
func taskInstanceCursor(t *persistence.TaskInstance) string {
	if t.ID == 0 {
		return rowCursorOf(kindTaskInstance, runningID)
	}
	return rowCursorOf(kindTaskInstance, t.ID)
}

// runningAttempt returns the attempt running for a workflow (derived from its claim, with its
// executor's host), or nil.
func (r *Resolver) runningAttempt(ctx context.Context, l *loaders, w *persistence.Workflow) (*persistence.TaskInstance, error) {
	t := r.engine.RunningAttempt(ctx, w)
	if t == nil || t.ExecutorID == nil {
		return t, nil // nothing runs, or a remote worker runs it (its name is the host)
	}
	e, err := l.executors.Load(ctx, *t.ExecutorID)()
	if err != nil {
		return nil, err
	}
	if e != nil {
		t.Host = e.Host
	}
	return t, nil
}

// withRunning places a running attempt in a page of stored task instances read by rowPage (in the
// order read: ascending forward, descending backward), where its place after every stored row falls
// inside the page's bounds.
func withRunning(rows []*persistence.TaskInstance, running *persistence.TaskInstance, p pageArgs, page persistence.PageParams) []*persistence.TaskInstance {
	if p.backward {
		// Read newest first below `before` (page.After) and above `after` (page.Before).
		if page.After != 0 || page.Before == runningID {
			return rows
		}
		return append([]*persistence.TaskInstance{running}, rows...)
	}
	if page.Before != 0 || page.After == runningID || len(rows) > p.limit {
		return rows // a bound below it, or stored rows fill the page first
	}
	return append(append([]*persistence.TaskInstance(nil), rows...), running)
}

// variablesAfter rebuilds a workflow's variables as they stood right after one of its actions.
func (r *Resolver) variablesAfter(ctx context.Context, workflowID, actionID int64) (json.RawMessage, error) {
	vars, err := r.reads(ctx).VariablesAsOf(ctx, workflowID, actionID)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(vars)
	if err != nil {
		return nil, fmt.Errorf("error encoding variables: %w", err)
	}
	return b, nil
}

// actionOf loads an action by opaque ID and checks it belongs to a workflow.
func (r *Resolver) actionOf(ctx context.Context, w *persistence.Workflow, field, id string) (*persistence.Action, error) {
	actionID, err := decodeID(field, kindAction, id)
	if err != nil {
		return nil, err
	}
	a, err := loadersFor(ctx, r.reads(ctx)).actionByID.Load(ctx, actionID)()
	if err != nil {
		return nil, err
	}
	if a == nil || a.WorkflowID != w.ID {
		return nil, &workflow.Error{Code: workflow.CodeNotFound, Field: field, Message: "workflow has no such action"}
	}
	return a, nil
}
