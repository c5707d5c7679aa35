package workflow

import (
	"context"
	"fmt"

	"github.com/cairnflow/cairn/internal/engineapi"
	"github.com/cairnflow/cairn/persistence"
)

// recoverOrphans declares dead the executors whose heartbeat expired and takes over the workflows they
// held: each is made due now, its running attempt recorded as a LOST task instance, with a RECOVERY
// action. The dead executor's late completions are fenced off by the version bump. It returns how
// many workflows were recovered.
func (e *Engine) recoverOrphans(ctx context.Context, p engineapi.RecoverParams) (int, error) {
	if p.Limit <= 0 {
		p.Limit = 500
	}
	wake := map[string]bool{}
	var n int
	err := e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		clear(wake)
		now := persistence.Now()
		var orphans []*persistence.Workflow
		var err error
		if len(p.Held) > 0 {
			orphans, err = tx.WorkflowHeldForUpdate(ctx, p.ExecutorID, p.Held)
		} else {
			if _, err := tx.ExecutorExpireDead(ctx, now); err != nil {
				return err
			}
			orphans, err = tx.WorkflowOrphaned(ctx, int64(p.Limit))
		}
		if err != nil {
			return err
		}
		n = len(orphans)
		if n == 0 {
			return nil
		}
		tasks := make([]*persistence.TaskInstance, 0, n)
		for _, w := range orphans {
			lost := "its executor stopped or stopped heartbeating while running this step"
			tasks = append(tasks, &persistence.TaskInstance{WorkflowID: w.ID, State: w.State, TaskType: "handler", Attempt: w.Retries + 1,
				Status: persistence.TaskLost, ExecutorID: w.ExecutorID, Started: w.Modified, Finished: &now, Error: &lost})
		}
		if err := tx.TaskInstanceInsertMany(ctx, tasks); err != nil {
			return err
		}
		actions := make([]*persistence.Action, 0, n)
		events := make([]*persistence.ChangeEvent, 0, n)
		for i, w := range orphans {
			text := "recovered from an executor that stopped"
			from := w.State
			if w.Status == persistence.StatusExecuting {
				w.Status = persistence.StatusInProgress
				w.NextActivation = &now
				wake[w.ExecutorGroup] = true
			} // else paused, cancelled or changed while the step ran: it stays as the operator left it
			w.ExecutorID = nil
			w.StepDeadline = nil
			if err := tx.WorkflowSave(ctx, w); err != nil {
				return err
			}
			actions = append(actions, &persistence.Action{WorkflowID: w.ID, Type: persistence.ActionRecovery, FromState: &from, State: w.State,
				StateText: &text, RetryNo: w.Retries, ExecutorID: &p.ExecutorID, TaskInstanceID: &tasks[i].ID, At: now})
			if w.NextActivation != nil && claimable(w.Status) {
				wake[w.ExecutorGroup] = true
			}
		}
		if err := tx.ActionInsertMany(ctx, actions); err != nil {
			return err
		}
		for i, a := range actions {
			events = append(events, &persistence.ChangeEvent{WorkflowID: a.WorkflowID, Type: string(persistence.ActionRecovery), ActionID: &a.ID,
				Status: orphans[i].Status, State: a.State, At: now})
		}
		return tx.ChangeEventInsertMany(ctx, events)
	})
	if err != nil {
		return 0, fmt.Errorf("error recovering dead executors' workflows: %w", err)
	}
	if n > 0 {
		e.log.Info("recovered workflows of dead executors", "count", n, "executor", p.ExecutorID)
	}
	e.afterCommit(wake, n > 0)
	return n, nil
}
