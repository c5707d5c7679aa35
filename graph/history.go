package graph

import (
	"context"
	"encoding/json"
	"fmt"

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
	l := loadersFor(ctx, r.store)
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
	l := loadersFor(ctx, r.store)
	rows, err := l.taskInstances.Load(ctx, pageKey{WorkflowID: w.ID, Page: page})()
	if err != nil {
		return nil, err
	}
	rows, info := cutPage(rows, p)
	conn := &model.TaskInstanceConnection{PageInfo: info, Edges: make([]*model.TaskInstanceEdge, len(rows)),
		Count: func(ctx context.Context) (int, error) { return l.taskCounts.Load(ctx, w.ID)() }}
	cursors := make([]string, len(rows))
	for i, t := range rows {
		cursors[i] = rowCursorOf(kindTaskInstance, t.ID)
		conn.Edges[i] = &model.TaskInstanceEdge{Cursor: cursors[i], Node: t}
	}
	setEnds(info, cursors)
	return conn, nil
}

// variablesAfter rebuilds a workflow's variables as they stood right after one of its actions.
func (r *Resolver) variablesAfter(ctx context.Context, workflowID, actionID int64) (json.RawMessage, error) {
	vars, err := r.store.VariablesAsOf(ctx, workflowID, actionID)
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
	a, err := loadersFor(ctx, r.store).actionByID.Load(ctx, actionID)()
	if err != nil {
		return nil, err
	}
	if a == nil || a.WorkflowID != w.ID {
		return nil, &workflow.Error{Code: workflow.CodeNotFound, Field: field, Message: "workflow has no such action"}
	}
	return a, nil
}
