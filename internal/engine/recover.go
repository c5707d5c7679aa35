package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// RecoverParams is the input of Recover.
type RecoverParams struct {
	// ExecutorID is the live executor doing the recovery (recorded on the RECOVERY actions).
	ExecutorID int64
	// Limit caps how many workflows one call takes over.
	Limit int
	// Held, when set, recovers these workflows of ExecutorID itself instead: ones the database says
	// it holds but it is not running (a completion lost in a database crash).
	Held []int64
	// Stopping says ExecutorID is stopping: the steps it still holds (a drain that ran out) are
	// released without spending an attempt, unlike those of executors that died.
	Stopping bool
}

// Recover declares dead the executors whose heartbeat expired and takes over the workflows they
// held: each running attempt is recorded as a LOST task instance and counted as a failed attempt
// (see countLostAttempt), with a RECOVERY action. The dead executor's late completions are fenced
// off by the version bump. It returns how many workflows were recovered.
func (e *Engine) Recover(ctx context.Context, p RecoverParams) (int, error) {
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
		n = 0
		if len(orphans) == 0 {
			return nil
		}
		tasks := make([]*persistence.TaskInstance, 0, len(orphans))
		actions := make([]*persistence.Action, 0, len(orphans))
		ending := map[int64]int64{} // children that end here, with the parent they wake
		for _, w := range orphans {
			lost := "its executor stopped or stopped heartbeating while running this step"
			// An attempt whose node died counts, so that a workflow that kills its nodes ends after
			// its retry policy instead of taking down every node in turn. One a pool let go of as it
			// stopped (a drain that ran out), or a completion the database lost, is not the workflow's fault.
			counted := w.Status == persistence.StatusExecuting && len(p.Held) == 0 && !(p.Stopping && ownExecutor(w, p.ExecutorID))
			if counted {
				lost = nodeDiedProblem(w.State).Error()
			}
			tasks = append(tasks, &persistence.TaskInstance{WorkflowID: w.ID, State: w.State, TaskType: "handler", Attempt: w.Retries + 1,
				Status: persistence.TaskLost, ExecutorID: w.ExecutorID, Started: w.Modified, Finished: &now, Error: &lost})
			text, from := "recovered from an executor that stopped", w.State
			actions = append(actions, &persistence.Action{WorkflowID: w.ID, Type: persistence.ActionRecovery, FromState: &from,
				StateText: &text, RetryNo: w.Retries, ExecutorID: &p.ExecutorID, At: now})
			switch {
			case counted:
				e.countLostAttempt(ctx, tx, w, lost, now)
				actions[len(actions)-1].StateText = w.StateText
				if w.Status.Terminal() && w.ParentID != nil {
					ending[w.ID] = *w.ParentID
				}
			case w.Status == persistence.StatusExecuting:
				w.Status = persistence.StatusInProgress
				w.NextActivation = &now
			} // else paused, cancelled or changed while the step ran: it stays as the operator left it
		}
		// A child that ends here wakes its parent. Its row is locked already, and cancelling a parent
		// locks it before its children: a parent another transaction holds is skipped, and its child
		// left to the next pass, rather than waited for (a deadlock).
		parents, err := skipBusyParents(ctx, tx, ending, &orphans, &tasks, &actions)
		if err != nil {
			return err
		}
		n = len(orphans)
		if err := tx.TaskInstanceInsertMany(ctx, tasks); err != nil {
			return err
		}
		events := make([]*persistence.ChangeEvent, 0, n)
		for i, w := range orphans {
			w.ExecutorID = nil
			w.StepDeadline = nil
			actions[i].State, actions[i].TaskInstanceID = w.State, &tasks[i].ID
			if err := tx.WorkflowSave(ctx, w); err != nil {
				return err
			}
			if w.NextActivation != nil && claimable(w.Status) {
				wake[w.ExecutorGroup] = true
			}
		}
		if err := tx.ActionInsertMany(ctx, actions); err != nil {
			return err
		}
		// A child that the lost attempt ended wakes its parent, as a child ending in a step does.
		woken, err := tx.WorkflowWake(ctx, persistence.WorkflowWakeParams{IDs: parents, Now: now})
		if err != nil {
			return err
		}
		for _, id := range woken {
			events = append(events, &persistence.ChangeEvent{WorkflowID: id, Type: workflow.EventWoken, Status: persistence.StatusInProgress, At: now})
		}
		if len(woken) > 0 {
			for _, g := range e.groups() {
				wake[g] = true
			}
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

// skipBusyParents locks the parents that children ending in this recovery wake (ending: child to
// parent), skipping those another transaction holds (SKIP LOCKED): the children of a skipped parent
// are dropped from this pass, with their task instance and action, to be recovered by the next.
// It returns the parents locked.
func skipBusyParents(ctx context.Context, tx *persistence.Store, ending map[int64]int64, orphans *[]*persistence.Workflow,
	tasks *[]*persistence.TaskInstance, actions *[]*persistence.Action) ([]int64, error) {
	if len(ending) == 0 {
		return nil, nil
	}
	parents := make([]int64, 0, len(ending))
	for _, id := range ending {
		if !slices.Contains(parents, id) {
			parents = append(parents, id)
		}
	}
	locked, err := tx.WorkflowLockAvailable(ctx, parents)
	if err != nil || len(locked) == len(parents) {
		return locked, err
	}
	keep := 0
	for i, w := range *orphans {
		if parent, ok := ending[w.ID]; ok && !slices.Contains(locked, parent) {
			continue
		}
		(*orphans)[keep], (*tasks)[keep], (*actions)[keep] = w, (*tasks)[i], (*actions)[i]
		keep++
	}
	*orphans, *tasks, *actions = (*orphans)[:keep], (*tasks)[:keep], (*actions)[:keep]
	return locked, nil
}

// ownExecutor reports whether a workflow is held by the executor recovering it.
func ownExecutor(w *persistence.Workflow, executorID int64) bool {
	return w.ExecutorID != nil && *w.ExecutorID == executorID
}

// countLostAttempt records the lost attempt of w as a failed one (problem is its Problem's JSON):
// due again now while its state's retry policy allows another attempt (the wait until the dead
// node's heartbeat expired already spaced them), else its ERROR state or MANUAL, as a failed
// attempt that was its last.
func (e *Engine) countLostAttempt(ctx context.Context, tx *persistence.Store, w *persistence.Workflow, problem string, now time.Time) {
	// A definition that cannot be loaded has the default policy (its next run fails anyway).
	def, err := e.specOf(ctx, tx, w)
	if err != nil {
		def = nil
	}
	policy := workflow.DefaultRetryPolicy
	if def != nil {
		state, _ := def.State(w.State)
		policy = def.RetryPolicyOf(state)
	}
	w.Retries++
	w.LastError = &problem
	w.StateText = strPtr(stateTextOf(problem))
	if w.Retries < policy.MaxAttempts {
		w.Status, w.NextActivation = persistence.StatusInProgress, &now
		return
	}
	w.Status, w.State, w.Finished = attemptsSpent(def, w.State, now)
	w.NextActivation, w.WaitSignal = nil, nil
}
