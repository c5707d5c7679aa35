package graph

import (
	"context"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/cairnflow/cairn/graph/model"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// kindRemoteTask names the IDs of remote tasks.
const kindRemoteTask = "RemoteTask"

// allowedFunctions returns the functions the caller may serve: nil (any) unless it authenticated
// with a worker token, whose functions came with its principal (no read of the token again).
func (r *Resolver) allowedFunctions(ctx context.Context) ([]string, error) {
	p, _ := PrincipalOf(ctx)
	if p.Role != RoleWorker {
		return nil, nil
	}
	return append([]string{}, p.Functions...), nil
}

// pollTasks leases tasks and loads their workflows in one read.
func (r *Resolver) pollTasks(ctx context.Context, in model.PollTasksInput) (*model.PollTasksPayload, error) {
	allowed, err := r.allowedFunctions(ctx)
	if err != nil {
		return nil, err
	}
	p := workflow.PollTasksParams{Functions: in.Functions, Max: in.Max, WaitMs: pollWaitWithin(ctx, in.WaitMs), LeaseMs: in.LeaseMs, Allowed: allowed}
	if in.Worker != nil {
		p.Worker = *in.Worker
	}
	leased, err := r.engine.PollTasks(ctx, p)
	if err != nil {
		return nil, err
	}
	out := &model.PollTasksPayload{Tasks: make([]*model.RemoteTask, 0, len(leased))}
	ids := make([]int64, len(leased))
	for i, t := range leased {
		ids[i] = t.WorkflowID
	}
	byID := map[int64]*persistence.Workflow{}
	// A worker may not read workflows beyond their IDs; nor need they be read when only their IDs
	// are asked for (a read less on every poll).
	if len(ids) > 0 && roleOf(ctx) != RoleWorker && !workflowsOnlyByID(graphql.GetFieldContext(ctx).Field.Selections, 0) {
		wfs, err := r.reads(ctx).WorkflowGetMany(ctx, ids)
		if err != nil {
			return nil, err
		}
		for _, w := range wfs {
			byID[w.ID] = w
		}
	}
	traces := map[int64]string{}
	if len(ids) > 0 && selectsField(graphql.GetFieldContext(ctx).Field.Selections, "traceparent", 0) {
		if traces, err = r.store.WorkflowTraceparents(ctx, ids); err != nil {
			return nil, err
		}
	}
	for _, t := range leased {
		w := byID[t.WorkflowID]
		if w == nil {
			w = &persistence.Workflow{ID: t.WorkflowID}
		}
		task := &model.RemoteTask{ID: encodeID(kindRemoteTask, t.ID), Token: t.Token, Function: t.Function,
			Input: t.Input, Attempt: t.Attempt, Deadline: *t.LeaseDeadline, Workflow: w}
		if tp, ok := traces[t.WorkflowID]; ok {
			task.Traceparent = &tp
		}
		out.Tasks = append(out.Tasks, task)
	}
	return out, nil
}

func (r *Resolver) heartbeatTask(ctx context.Context, in model.HeartbeatTaskInput) (*model.HeartbeatTaskPayload, error) {
	allowed, err := r.allowedFunctions(ctx)
	if err != nil {
		return nil, err
	}
	d, err := r.engine.HeartbeatTask(ctx, in.Token, allowed)
	if err != nil {
		return nil, err
	}
	return &model.HeartbeatTaskPayload{Deadline: d}, nil
}

func (r *Resolver) completeTask(ctx context.Context, in model.CompleteTaskInput) (*model.TaskPayload, error) {
	allowed, err := r.allowedFunctions(ctx)
	if err != nil {
		return nil, err
	}
	t, err := r.engine.CompleteTask(ctx, in.Token, in.Output, allowed)
	if err != nil {
		return nil, err
	}
	return &model.TaskPayload{ID: encodeID(kindRemoteTask, t.ID), Status: string(t.Status)}, nil
}

// completeTasks writes many results at once: bad input refuses the call, a stale token is its
// own item's CONFLICT.
func (r *Resolver) completeTasks(ctx context.Context, in model.CompleteTasksInput) (*model.CompleteTasksPayload, error) {
	allowed, err := r.allowedFunctions(ctx)
	if err != nil {
		return nil, err
	}
	results := make([]workflow.TaskResult, len(in.Results))
	for i, res := range in.Results {
		results[i] = workflow.TaskResult{Token: res.Token, Output: res.Output}
	}
	ended, err := r.engine.CompleteTasks(ctx, results, allowed)
	if err != nil {
		return nil, err
	}
	out := &model.CompleteTasksPayload{Results: make([]*model.CompletedTask, len(ended))}
	for i, e := range ended {
		item := &model.CompletedTask{ID: encodeID(kindRemoteTask, e.ID)}
		if e.Task != nil {
			status := string(e.Task.Status)
			item.Status = &status
		} else {
			code := string(workflow.CodeConflict)
			item.Code = &code
		}
		out.Results[i] = item
	}
	return out, nil
}

func (r *Resolver) failTask(ctx context.Context, in model.FailTaskInput) (*model.TaskPayload, error) {
	allowed, err := r.allowedFunctions(ctx)
	if err != nil {
		return nil, err
	}
	var f workflow.TaskFailure
	if e := in.Error; e != nil {
		f.Status = e.Status
		for dst, src := range map[*string]*string{&f.Type: e.Type, &f.Title: e.Title, &f.Detail: e.Detail} {
			if src != nil {
				*dst = *src
			}
		}
	}
	t, err := r.engine.FailTask(ctx, in.Token, f, in.Retryable != nil && *in.Retryable, allowed)
	if err != nil {
		return nil, err
	}
	return &model.TaskPayload{ID: encodeID(kindRemoteTask, t.ID), Status: string(t.Status)}, nil
}

func (r *Resolver) remoteWorkers(ctx context.Context, alive *bool) ([]*model.RemoteWorker, error) {
	ws, err := r.engine.RemoteWorkers(ctx)
	if err != nil {
		return nil, err
	}
	since := persistence.Now().Add(-workflow.RemoteWorkerAliveWithin)
	out := make([]*model.RemoteWorker, 0, len(ws))
	for _, w := range ws {
		live := !w.LastPoll.Before(since)
		if alive != nil && *alive != live {
			continue
		}
		out = append(out, &model.RemoteWorker{Name: w.Name, Functions: strings.Split(w.Functions, ","), LastPoll: w.LastPoll, TasksHeld: w.Held, Alive: live})
	}
	return out, nil
}

// selectsField reports whether a selection set (through its fragments) selects a field of a
// name at any depth.
func selectsField(set ast.SelectionSet, name string, depth int) bool {
	if depth > 10 {
		return true
	}
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			if s.Name == name || selectsField(s.SelectionSet, name, depth+1) {
				return true
			}
		case *ast.InlineFragment:
			if selectsField(s.SelectionSet, name, depth+1) {
				return true
			}
		case *ast.FragmentSpread:
			if s.Definition == nil || selectsField(s.Definition.SelectionSet, name, depth+1) {
				return true
			}
		}
	}
	return false
}

// onlyFields reports whether a selection set (through its fragments) selects only allowed fields.
func onlyFields(set ast.SelectionSet, allowed map[string]bool, depth int) bool {
	if depth > 10 {
		return false
	}
	for _, s := range set {
		switch s := s.(type) {
		case *ast.Field:
			if !allowed[s.Name] {
				return false
			}
		case *ast.InlineFragment:
			if !onlyFields(s.SelectionSet, allowed, depth+1) {
				return false
			}
		case *ast.FragmentSpread:
			if s.Definition == nil || !onlyFields(s.Definition.SelectionSet, allowed, depth+1) {
				return false
			}
		}
	}
	return true
}

// workflowIDOnly is what a worker may read of a task's workflow.
var workflowIDOnly = map[string]bool{"id": true, "__typename": true}

// workflowsOnlyByID reports whether every workflow field under a selection set reads only its ID.
func workflowsOnlyByID(set ast.SelectionSet, depth int) bool {
	if depth > 20 {
		return false
	}
	for _, s := range set {
		var sub ast.SelectionSet
		switch s := s.(type) {
		case *ast.Field:
			if s.Name == "workflow" && !onlyFields(s.SelectionSet, workflowIDOnly, 0) {
				return false
			}
			sub = s.SelectionSet
		case *ast.InlineFragment:
			sub = s.SelectionSet
		case *ast.FragmentSpread:
			if s.Definition == nil {
				return false
			}
			sub = s.Definition.SelectionSet
		}
		if !workflowsOnlyByID(sub, depth+1) {
			return false
		}
	}
	return true
}
