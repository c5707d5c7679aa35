package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// CompleteTasks ends many leased tasks with their outputs, in one transaction with the results
// that arrive meanwhile, and wakes their workflows. Every result is checked before anything is
// written: output that is not a storable JSON value or is too large, or a token that is not a task
// token, is INVALID_INPUT naming it (results[i].output, results[i].token), and a task of a
// function the caller may not serve is FORBIDDEN; either refuses the whole call, and every task
// stays leased. Tokens are then fenced one by one: a result whose token no longer holds its task
// gets a nil Task in its item and writes nothing, while the others are written. The items follow
// the results' order.
func (e *Engine) CompleteTasks(ctx context.Context, results []workflow.TaskResult, allowed []string) ([]workflow.EndedTask, error) {
	e.remote.init()
	if len(results) == 0 || len(results) > workflow.MaxCompleteTasks {
		return nil, invalid("results", "pass from 1 to %d results, not %d", workflow.MaxCompleteTasks, len(results))
	}
	ps := make([]persistence.RemoteTaskEndParams, len(results))
	for i, r := range results {
		output, err := checkTaskOutput(fmt.Sprintf("results[%d].output", i), r.Output)
		if err == nil {
			err = checkValue(e.limits, fmt.Sprintf("results[%d].output", i), output)
		}
		if err != nil {
			return nil, err
		}
		id, secret, err := parseTaskToken(r.Token)
		if err != nil {
			return nil, invalid(fmt.Sprintf("results[%d].token", i), "not a task token (pass the token pollTasks returned)")
		}
		ps[i] = persistence.RemoteTaskEndParams{ID: id, Token: secret, Status: persistence.RemoteTaskSucceeded, Output: output}
	}
	if allowed != nil {
		if err := e.checkTaskFunctions(ctx, ps, allowed); err != nil {
			return nil, err
		}
	}
	tasks, errs := e.remote.ends.doMany(ctx, e, ps)
	out := make([]workflow.EndedTask, len(ps))
	for i, p := range ps {
		out[i] = workflow.EndedTask{ID: p.ID}
		switch {
		case errs[i] == nil:
			out[i].Task = tasks[i]
		case errors.Is(errs[i], persistence.ErrConflict):
		default:
			return nil, errs[i]
		}
	}
	return out, nil
}

// checkTaskFunctions refuses, with FORBIDDEN naming the result, a task of a function the caller
// may not serve; the tasks are read in one statement. A token naming no task is left to the fence
// (CONFLICT).
func (e *Engine) checkTaskFunctions(ctx context.Context, ps []persistence.RemoteTaskEndParams, allowed []string) error {
	ids := make([]int64, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
	}
	ts, err := e.store.RemoteTaskGetMany(ctx, ids)
	if err != nil {
		return err
	}
	fn := make(map[int64]string, len(ts))
	for _, t := range ts {
		fn[t.ID] = t.Function
	}
	for i, p := range ps {
		if f, ok := fn[p.ID]; ok && !slices.Contains(allowed, f) {
			return forbidden(fmt.Sprintf("results[%d].token", i), "this token may not serve function %q", f)
		}
	}
	return nil
}
