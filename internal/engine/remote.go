package engine

import (
	"context"
	"encoding/json"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// remoteCall is what a step's CallRemote found or asked for.
type remoteCall struct {
	function string
	// create is the task to create when the step's outcome is written (nil: one exists).
	create *persistence.RemoteTask
	// existing is the task still running that the step waits for.
	existing *persistence.RemoteTask
	// used is the ended task whose result the step read: its workflow records it.
	used *persistence.RemoteTask
}

// remoteFailure is the error a failed task gives its step.
func remoteFailure(t *persistence.RemoteTask) error {
	re := &workflow.RemoteError{Function: t.Function, Retryable: t.Retryable, Attempt: t.Attempt}
	if len(t.Error) > 0 {
		_ = json.Unmarshal(t.Error, re)
	}
	if re.Type == "" {
		re.Type = workflow.RemoteFailedType
	}
	if !re.Retryable {
		return workflow.NonRetryable(re)
	}
	return re
}

// awaitRemote is the outcome of a step waiting for its remote task: the workflow WAITs (no
// action: its state does not change), and the task is created with the outcome.
func (e *Engine) awaitRemote(o *Outcome, def *workflow.Definition, state *workflow.State, sc *stepContext) *Outcome {
	w := o.workflow
	o.def = def
	o.completion = e.keep(w, persistence.StatusWaiting)
	rc := sc.remote
	if rc.create != nil {
		t := rc.create
		t.WorkflowID, t.State, t.ExecutorGroup = w.ID, w.State, w.ExecutorGroup
		// The task's attempts continue the state's: a lease that runs out counts as one, and the
		// policy's attempts bound both.
		t.Attempt, t.MaxAttempts = w.Retries, def.RetryPolicyOf(state).MaxAttempts
		o.remoteCreate = t
	} else {
		o.remoteWait = rc.existing.ID
	}
	return o
}

// recordRemote makes an outcome record the remote task whose result its step read: the task is
// marked recorded with it, and its task instance says what the worker did.
func recordRemote(o *Outcome, sc *stepContext) *Outcome {
	if sc == nil || sc.remote == nil || sc.remote.used == nil {
		return o
	}
	t := sc.remote.used
	o.remoteConsume = t.ID
	if o.task == nil {
		return o
	}
	o.task.TaskType = "remote:" + t.Function
	o.task.Attempt = t.Attempt
	if t.Worker != nil {
		o.task.Host = *t.Worker
	}
	if t.Leased != nil {
		o.task.Started = *t.Leased
	}
	if len(o.task.Output) == 0 && t.Status == persistence.RemoteTaskSucceeded {
		o.task.Output = t.Output
	}
	if t.Status == persistence.RemoteTaskFailed && o.task.Status == persistence.TaskSucceeded {
		// The handler handled the failure (a catch); the attempt still failed.
		o.task.Status = persistence.TaskFailed
		msg := remoteFailure(t).Error()
		o.task.Error = &msg
	}
	return o
}

// completeRemote writes the remote tasks of written outcomes inside their completion's
// transaction: it creates the tasks asked for, marks those read as recorded, and wakes the
// workflows that went back to WAITING for a task that ended meanwhile (their step read it still
// running; the worker's wake-up found them not yet WAITING). It returns the workflows it woke.
func (e *Engine) completeRemote(ctx context.Context, tx *persistence.Store, written []*Outcome) ([]int64, error) {
	var consume, waits []int64
	var create []*persistence.RemoteTask
	for _, o := range written {
		if o.remoteCreate != nil {
			create = append(create, o.remoteCreate)
		}
		if o.remoteConsume != 0 {
			consume = append(consume, o.remoteConsume)
		}
		if o.remoteWait != 0 {
			waits = append(waits, o.remoteWait)
		}
	}
	if err := tx.RemoteTaskCreateMany(ctx, create); err != nil {
		return nil, err
	}
	now := persistence.Now()
	if err := tx.RemoteTaskConsume(ctx, consume, now); err != nil {
		return nil, err
	}
	ended, err := tx.RemoteTaskEndedAmong(ctx, waits)
	if err != nil || len(ended) == 0 {
		return nil, err
	}
	ids := make([]int64, len(ended))
	for i, t := range ended {
		ids[i] = t.WorkflowID
	}
	return tx.WorkflowWake(ctx, persistence.WorkflowWakeParams{IDs: ids, Now: now})
}

// notifyRemote tells long-polling workers, here and on other nodes, of the tasks just created.
func (e *Engine) notifyRemote(written []*Outcome) {
	sent := map[string]bool{}
	for _, o := range written {
		if t := o.remoteCreate; t != nil && !sent[t.Function] {
			sent[t.Function] = true
			e.notifier.Notify(persistence.TopicTasks, t.Function)
		}
	}
}
