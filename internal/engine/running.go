package engine

import (
	"context"

	"github.com/cairnflow/cairn/persistence"
)

// RunningAttempt returns the attempt that holds a workflow now as a RUNNING task instance, or nil
// when none does. It is derived from the claimed workflow row, not stored (its ID is 0): an
// attempt's row is written once, when it ends, so that a step costs no extra write. It started
// when its executor claimed the workflow for it: its step deadline less its state's timeout.
func (e *Engine) RunningAttempt(ctx context.Context, w *persistence.Workflow) *persistence.TaskInstance {
	if w.ExecutorID == nil {
		if w.Status == persistence.StatusWaiting {
			return e.runningRemote(ctx, w)
		}
		return nil
	}
	t := &persistence.TaskInstance{WorkflowID: w.ID, State: w.State, TaskType: taskTypeOf(nil), Attempt: w.Retries + 1,
		Status: persistence.TaskRunning, ExecutorID: w.ExecutorID, Started: w.Modified}
	def, err := e.specOf(ctx, e.store, w)
	if err != nil {
		return t // the definition is gone: the row still shows what runs, with the claim's time
	}
	s, _ := def.State(w.State)
	t.TaskType = taskTypeOf(s)
	if w.StepDeadline != nil {
		t.Started = w.StepDeadline.Add(-def.TimeoutOf(s))
	}
	return t
}

// runningRemote returns a WAITING workflow's remote task as a RUNNING task instance while a worker
// holds its lease (no executor: the worker's name is its host), or nil.
func (e *Engine) runningRemote(ctx context.Context, w *persistence.Workflow) *persistence.TaskInstance {
	t, err := e.store.RemoteTaskCurrent(ctx, w.ID)
	if err != nil || t.Status != persistence.RemoteTaskLeased || t.State != w.State {
		return nil
	}
	ti := &persistence.TaskInstance{WorkflowID: w.ID, State: w.State, TaskType: "remote:" + t.Function, Attempt: t.Attempt,
		Status: persistence.TaskRunning, Started: t.Created}
	if t.Leased != nil {
		ti.Started = *t.Leased
	}
	if t.Worker != nil {
		ti.Host = *t.Worker
	}
	return ti
}
