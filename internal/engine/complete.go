// Completing: a batch of outcomes is written in one transaction, fenced by each workflow's claim,
// with everything the steps asked for (children, signals consumed, wake-ups).

package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// Complete writes a batch of outcomes in one transaction: each workflow row (only where the
// executor still holds it at the claimed version), then its task instance, action, variable
// changes, activity logs, consumed signal, children and change events. It returns the outcomes
// that were written; the others lost their claim and left no trace.
func (e *Engine) Complete(ctx context.Context, outcomes []*Outcome) ([]*Outcome, error) {
	written, _, err := e.CompleteAndContinue(ctx, outcomes, nil)
	return written, err
}

// CompleteAndContinue is Complete, except that a workflow whose next step is due now, and that keep
// accepts, stays claimed by its executor: it is returned (as it now is, EXECUTING at its new
// version) for the executor to run the next step at once, without releasing and claiming it again.
func (e *Engine) CompleteAndContinue(ctx context.Context, outcomes []*Outcome, keep func(*Outcome) bool) (written []*Outcome, continued []*persistence.Workflow, err error) {
	if len(outcomes) == 0 {
		return nil, nil, nil
	}
	if first, later := splitAttempts(outcomes); len(later) > 0 {
		// Two attempts of one workflow (a late one of this node's former executor, declared dead,
		// and a new one): the fenced statement tells written rows apart by workflow only, so each
		// goes in its own transaction.
		if written, continued, err = e.CompleteAndContinue(ctx, first, keep); err != nil {
			return nil, nil, err
		}
		w2, c2, err := e.CompleteAndContinue(ctx, later, keep)
		return append(written, w2...), append(continued, c2...), err
	}
	// The rows to write: each outcome's completion, or, for a workflow kept for its next step, a
	// copy that stays EXECUTING under the executor. The outcomes themselves are left as they are,
	// so that a failed attempt can be retried (or decided differently) from scratch.
	now := persistence.Now()
	cs := make([]persistence.WorkflowCompletion, len(outcomes))
	for i, o := range outcomes {
		c := o.completion
		c.Steps = o.stepsAfter()
		if keep != nil && c.Status == persistence.StatusInProgress && c.NextActivation != nil && !c.NextActivation.After(now) && keep(o) {
			c.KeepClaim = true
			c.Status = persistence.StatusExecuting
			c.StepDeadline = timePtr(now.Add(o.nextTimeout(c.State)))
		}
		cs[i] = c
	}
	kept := make(map[int64]bool)
	for _, c := range cs {
		if c.KeepClaim {
			kept[c.ID] = true
		}
	}
	wake := map[string]bool{}
	var interrupt, handed []*persistence.Workflow
	hand := e.planHandoff(ctx, outcomes, keep)
	err = e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		written = written[:0]
		clear(wake)
		interrupt, handed = nil, nil
		// A completion lost in a database crash is found by its worker's reconciliation and the
		// step runs again, so it need not wait for the disk.
		if err := tx.AsyncCommit(ctx); err != nil {
			return err
		}
		// Parents that children ending here will wake are locked before the children's rows, as
		// cancelling a parent locks it before its children: one lock order, no deadlock.
		if err := tx.WorkflowLock(ctx, endingParents(outcomes)); err != nil {
			return err
		}
		ids, err := tx.WorkflowCompleteMany(ctx, cs)
		if err != nil {
			return err
		}
		ok := make(map[int64]bool, len(ids))
		for _, id := range ids {
			ok[id] = true
		}
		for _, o := range outcomes {
			if ok[o.workflow.ID] {
				written = append(written, o)
			}
		}
		if handed, err = hand.run(ctx, e, tx, outcomes, ok, now); err != nil {
			return err
		}
		var tasks []*persistence.TaskInstance
		if len(written) < len(outcomes) {
			// Fenced off: attempts whose workflow an operator paused, cancelled or changed while
			// they ran still hold it; they let go of it now, and say so in a CANCELLED row.
			if tasks, err = e.releaseFenced(ctx, tx, outcomes, ok, wake); err != nil {
				return err
			}
		}
		if len(written) == 0 && len(tasks) == 0 {
			return nil
		}
		now := persistence.Now()
		for _, o := range written {
			if o.task != nil {
				tasks = append(tasks, o.task)
			}
		}
		if err := tx.TaskInstanceInsertMany(ctx, tasks); err != nil {
			return err
		}
		if len(written) == 0 {
			return nil
		}
		var actions []*persistence.Action
		for _, o := range written {
			if o.action != nil {
				if o.task != nil {
					o.action.TaskInstanceID = &o.task.ID
				}
				actions = append(actions, o.action)
			}
		}
		if err := tx.ActionInsertMany(ctx, actions); err != nil {
			return err
		}
		defs := map[string]*persistence.Definition{} // newest definition of each child type, read once per batch
		var (
			vars     []*persistence.ActionVariable
			logs     []*persistence.ActivityLog
			consumed = map[int64]int64{}
			children []*persistence.Workflow
			events   []*persistence.ChangeEvent
			waiting  []waiter
			parents  []int64
		)
		for _, o := range written {
			c := o.completion
			var actionID *int64
			if o.action != nil {
				actionID = &o.action.ID
				vars = append(vars, actionVariables(o.workflow.ID, o.action.ID, o.vars)...)
				evType := string(o.action.Type)
				events = append(events, &persistence.ChangeEvent{WorkflowID: o.workflow.ID, Type: evType, ActionID: actionID, Status: c.Status, State: c.State, At: now})
			}
			if err := tx.WorkflowAttributesSet(ctx, o.workflow.ID, o.attrs); err != nil {
				return err
			}
			for _, l := range o.logs {
				if o.task != nil {
					l.TaskInstanceID = &o.task.ID
				}
				logs = append(logs, l)
			}
			if o.signal != nil && o.action != nil {
				consumed[o.signal.ID] = o.action.ID
			}
			for _, req := range o.children {
				child, err := e.childWorkflow(ctx, tx, defs, o, req, now)
				if err != nil {
					return err
				}
				children = append(children, child)
			}
			if o.wait != nil {
				waiting = append(waiting, waiter{id: o.workflow.ID, wait: o.wait})
			}
			if c.Status.Terminal() && o.workflow.ParentID != nil {
				parents = append(parents, *o.workflow.ParentID)
			}
			if c.NextActivation != nil && !c.NextActivation.After(now) && claimable(c.Status) && !kept[o.workflow.ID] {
				wake[o.group] = true
			}
		}
		if err := tx.ActionVariableInsertMany(ctx, vars); err != nil {
			return err
		}
		if err := tx.ActivityLogInsertMany(ctx, logs); err != nil {
			return err
		}
		if err := tx.SignalConsumeMany(ctx, consumed, now); err != nil {
			return err
		}
		if err := tx.WorkflowInsertMany(ctx, children); err != nil {
			return err
		}
		for _, ch := range children {
			events = append(events, &persistence.ChangeEvent{WorkflowID: ch.ID, Type: workflow.EventCreated, Status: ch.Status, State: ch.State, At: now})
			wake[ch.ExecutorGroup] = true
		}
		if interrupt, err = e.applyEffects(ctx, tx, written, wake); err != nil {
			return err
		}
		woken, err := e.wakeSatisfiedWaits(ctx, tx, waiting, now)
		if err != nil {
			return err
		}
		remoteWoken, err := e.completeRemote(ctx, tx, written)
		if err != nil {
			return err
		}
		woken = append(woken, remoteWoken...)
		if len(parents) > 0 {
			ws, err := tx.WorkflowWake(ctx, persistence.WorkflowWakeParams{IDs: parents, Now: now})
			if err != nil {
				return err
			}
			woken = append(woken, ws...)
		}
		for _, id := range woken {
			events = append(events, &persistence.ChangeEvent{WorkflowID: id, Type: workflow.EventWoken, Status: persistence.StatusInProgress, State: "", At: now})
		}
		if len(woken) > 0 {
			for _, g := range e.groups() {
				wake[g] = true
			}
		}
		return tx.ChangeEventInsertMany(ctx, events)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("error completing %d steps: %w", len(outcomes), err)
	}
	for _, w := range interrupt {
		e.interrupt(w.ID, w.Version)
	}
	e.afterCommit(wake, len(written) > 0)
	e.notifyRemote(written)
	continued = append(continued, handed...) // slots handed on: their next workflows run at once
	if len(kept) > 0 {
		wrote := make(map[*Outcome]bool, len(written))
		for _, o := range written {
			wrote[o] = true
		}
		for i, o := range outcomes {
			if kept[o.workflow.ID] && wrote[o] {
				continued = append(continued, o.continuation(cs[i], now))
			}
		}
	}
	return written, continued, nil
}

// endingParents returns the parents of the workflows the outcomes end.
func endingParents(outcomes []*Outcome) []int64 {
	var ids []int64
	for _, o := range outcomes {
		if o.completion.Status.Terminal() && o.workflow.ParentID != nil {
			ids = append(ids, *o.workflow.ParentID)
		}
	}
	return ids
}

// splitAttempts keeps the first outcome of each workflow in first and puts any other in later.
func splitAttempts(outcomes []*Outcome) (first, later []*Outcome) {
	seen := make(map[int64]bool, len(outcomes))
	for i, o := range outcomes {
		if seen[o.workflow.ID] {
			first = append(first, outcomes[:i]...)
			for _, o := range outcomes[i:] {
				if seen[o.workflow.ID] {
					later = append(later, o)
				} else {
					seen[o.workflow.ID] = true
					first = append(first, o)
				}
			}
			return first, later
		}
		seen[o.workflow.ID] = true
	}
	return outcomes, nil
}

// nextTimeout is how long the step of the state an outcome moves to may run.
func (o *Outcome) nextTimeout(state string) time.Duration {
	if o.def == nil {
		return workflow.DefaultStepTimeout
	}
	s, _ := o.def.State(state)
	return o.def.TimeoutOf(s)
}

// releaseFenced ends the claim of fenced-off outcomes whose executor still holds their workflow:
// an operator paused, cancelled or changed it while the step ran (a recovery would have taken the
// claim away). Their results are discarded; each attempt that ran is returned as a CANCELLED task
// instance to record, and the groups of released workflows are marked to wake.
func (e *Engine) releaseFenced(ctx context.Context, tx *persistence.Store, outcomes []*Outcome, written map[int64]bool, wake map[string]bool) ([]*persistence.TaskInstance, error) {
	byExecutor := map[int64][]int64{}
	for _, o := range outcomes {
		if !written[o.workflow.ID] {
			byExecutor[o.executorID] = append(byExecutor[o.executorID], o.workflow.ID)
		}
	}
	released := map[int64]bool{}
	for executorID, ids := range byExecutor {
		got, err := tx.WorkflowRelease(ctx, persistence.WorkflowReleaseParams{ExecutorID: executorID, IDs: ids})
		if err != nil {
			return nil, err
		}
		for _, id := range got {
			released[id] = true
		}
	}
	var tasks []*persistence.TaskInstance
	for _, o := range outcomes {
		if written[o.workflow.ID] || !released[o.workflow.ID] {
			continue
		}
		wake[o.group] = true
		if o.task == nil {
			continue // nothing ran (a WAIT state still waiting)
		}
		t := *o.task
		t.ID, t.Status, t.Output = 0, persistence.TaskCancelled, nil
		msg := "the workflow was paused, cancelled or changed while this step ran; its result was discarded"
		if t.Error != nil {
			msg += ": " + *t.Error
		}
		t.Error = &msg
		tasks = append(tasks, &t)
	}
	return tasks, nil
}

// continuation is the workflow row as a kept completion c left it: EXECUTING, still held.
func (o *Outcome) continuation(c persistence.WorkflowCompletion, now time.Time) *persistence.Workflow {
	w := *o.workflow
	w.Status, w.State, w.StateText, w.NextActivation, w.Retries = c.Status, c.State, c.StateText, c.NextActivation, c.Retries
	w.Variables, w.WaitSignal, w.LastError, w.Finished, w.StepDeadline = c.Variables, c.WaitSignal, c.LastError, c.Finished, c.StepDeadline
	w.Version = c.ClaimedVersion + 1
	w.Steps = c.Steps
	w.Modified = now
	return &w
}

// childWorkflow builds the row of a child a step asked for (or of a detached workflow: no parent).
func (e *Engine) childWorkflow(ctx context.Context, tx *persistence.Store, defs map[string]*persistence.Definition, parent *Outcome, req workflow.ChildRequest, now time.Time) (*persistence.Workflow, error) {
	key := fmt.Sprintf("%s\x00%d", req.Type, req.Version)
	def, ok := defs[key]
	if !ok {
		var err error
		if def, err = tx.DefinitionGet(ctx, persistence.DefinitionGetParams{Type: req.Type, Version: req.Version}); err != nil {
			return nil, workflow.NonRetryable(fmt.Errorf("error starting child of type %q: %w", req.Type, err))
		}
		defs[key] = def
	}
	if err := startable(def, "type"); err != nil {
		return nil, workflow.NonRetryable(fmt.Errorf("error starting child of type %q: %w", req.Type, err))
	}
	spec, err := e.specOfRow(def)
	if err != nil {
		return nil, err
	}
	_, input, err := decodeObject("input", req.Input)
	if err != nil {
		return nil, err
	}
	if req.Detached {
		at := now
		if req.StartAt != nil && req.StartAt.After(now) {
			at = persistence.UTC(*req.StartAt)
		}
		return &persistence.Workflow{Type: req.Type, DefinitionVersion: def.Version, ExternalID: strPtr(req.ExternalID),
			BusinessKey: strPtr(req.BusinessKey), Status: persistence.StatusCreated, State: spec.StartState().Name,
			NextActivation: &at, Priority: req.Priority, ExecutorGroup: def.ExecutorGroup, Input: input,
			Variables: json.RawMessage(`{}`), Created: now, Modified: now}, nil
	}
	p := parent.workflow
	root := p.ID
	if p.RootID != nil {
		root = *p.RootID
	}
	return &persistence.Workflow{Type: req.Type, DefinitionVersion: def.Version, ExternalID: strPtr(req.ExternalID),
		BusinessKey: strPtr(req.BusinessKey), Status: persistence.StatusCreated, State: spec.StartState().Name,
		NextActivation: &now, Priority: req.Priority, ExecutorGroup: def.ExecutorGroup, ParentID: &p.ID, RootID: &root,
		ParentActionID: &parent.action.ID, Input: input, Variables: json.RawMessage(`{}`), Created: now, Modified: now}, nil
}

// waiter is a workflow that is (now) WAITING, and what for.
type waiter struct {
	id   int64
	wait *workflow.WaitFor
}

// wakeSatisfiedWaits wakes workflows that just entered a WAIT state whose condition already holds
// (a signal that arrived early, children that all ended). It runs after their rows were written, so
// a concurrent signal or child either sees them WAITING or is seen here.
func (e *Engine) wakeSatisfiedWaits(ctx context.Context, tx *persistence.Store, waiting []waiter, now time.Time) ([]int64, error) {
	if len(waiting) == 0 {
		return nil, nil
	}
	signals := map[int64][]string{} // the names each waits for (nil: any)
	var parents []int64
	for _, w := range waiting {
		switch {
		case w.wait.TakesSignals():
			signals[w.id] = w.wait.Names()
		case w.wait.Children:
			parents = append(parents, w.id)
		}
	}
	var ready []int64
	has, err := tx.SignalHasPending(ctx, signals)
	if err != nil {
		return nil, err
	}
	for id := range has {
		ready = append(ready, id)
	}
	active, err := tx.WorkflowActiveChildren(ctx, parents)
	if err != nil {
		return nil, err
	}
	for _, id := range parents {
		if active[id] == 0 {
			ready = append(ready, id)
		}
	}
	if len(ready) == 0 {
		return nil, nil
	}
	return tx.WorkflowWake(ctx, persistence.WorkflowWakeParams{IDs: ready, Now: now})
}
