package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/cairnflow/cairn/internal/engineapi"
	"github.com/cairnflow/cairn/persistence"
)

// outcome is the result of running one claimed workflow's step: everything complete writes for it.
// It is the engineapi.Outcome the worker pool carries from execute to complete.
type outcome struct {
	workflow   *persistence.Workflow
	executorID int64
	host       string
	started    time.Time

	completion persistence.WorkflowCompletion
	task       *persistence.TaskInstance // nil: nothing ran (a WAIT state still waiting)
	action     *persistence.Action       // nil: no change of state to record
	vars       map[string]json.RawMessage
	logs       []*persistence.ActivityLog
	children   []ChildRequest
	signal     *persistence.Signal // consumed by this step
	wait       *WaitFor            // entered a WAIT state: check whether it is already satisfied
	def        *Definition         // the definition the step ran (nil: it could not be loaded)
	// group is the executor group, to wake when the outcome makes work due now.
	group string
	// The remote task the outcome creates, waits for again, or records (see remote.go).
	remoteCreate  *persistence.RemoteTask
	remoteWait    int64
	remoteConsume int64
}

// WorkflowID is the ID of the workflow the outcome belongs to.
func (o *outcome) WorkflowID() int64 { return o.workflow.ID }

// ClaimedVersion is the workflow's version when its executor claimed it for this attempt: with the
// workflow ID, it names the attempt.
func (o *outcome) ClaimedVersion() int { return o.workflow.Version }

// Status is the status the workflow will have once the outcome is written.
func (o *outcome) Status() persistence.Status { return o.completion.Status }

// TaskStatus is the status of the attempt ("" when nothing ran).
func (o *outcome) TaskStatus() persistence.TaskStatus {
	if o.task == nil {
		return ""
	}
	return o.task.Status
}

// stepGrace is how long past its deadline a handler may take to return before the attempt is
// recorded as timed out without it (its goroutine is abandoned).
const stepGrace = 2 * time.Second

// execute runs the current state of a workflow claimed by an executor and returns the outcome to
// pass to complete. It never panics and never blocks past the state's timeout (plus a short grace):
// a handler that panics is a failed attempt, one that does not return in time a timed-out attempt.
func (e *Engine) execute(ctx context.Context, p engineapi.ExecuteParams) *outcome {
	w := p.Workflow
	now := persistence.Now()
	o := &outcome{workflow: w, executorID: p.ExecutorID, host: p.Host, started: now, group: w.ExecutorGroup}
	def, err := e.specOf(ctx, e.store, w)
	if err != nil {
		return e.failure(o, nil, nil, fmt.Errorf("error loading definition %s v%d: %w", w.Type, w.DefinitionVersion, err), persistence.TaskFailed)
	}
	state, ok := def.State(w.State)
	if !ok {
		return e.failure(o, def, nil, NonRetryable(fmt.Errorf("definition %s v%d has no state %q", w.Type, w.DefinitionVersion, w.State)), persistence.TaskFailed)
	}
	if state.Kind != Wait {
		return e.run(ctx, o, def, state, nil)
	}
	// A WAIT state: run on only when what it waits for has come.
	ready, sig, err := e.waitSatisfied(ctx, w, state)
	if err != nil {
		return e.failure(o, def, state, err, persistence.TaskFailed)
	}
	if !ready {
		deadline, err := e.waitDeadline(ctx, w, state)
		if err != nil {
			return e.failure(o, def, state, err, persistence.TaskFailed)
		}
		if deadline != nil && !deadline.After(now) {
			return e.failure(o, def, state, fmt.Errorf("timed out after %s waiting in state %q", state.Timeout, state.Name), persistence.TaskTimedOut)
		}
		if own := variableDeadline(w, state); own != nil {
			if !own.After(now) {
				// The workflow's own deadline passed: its handler decides what a timeout means.
				return e.run(ctx, o, def, state, nil)
			}
			if deadline == nil || own.Before(*deadline) {
				deadline = own
			}
		}
		// Woken early (another signal, a child still running): wait on, recording nothing. The
		// condition is checked again inside the completion transaction, where a signal or child
		// that lands meanwhile is seen (or sees this workflow WAITING): no wake-up is lost.
		o.completion = e.keep(w, persistence.StatusWaiting)
		o.completion.WaitSignal = w.WaitSignal
		o.completion.NextActivation = deadline
		o.wait = state.WaitFor
		return o
	}
	o.signal = sig
	if state.Handler == nil {
		return e.apply(o, def, state, MoveTo(state.Next[0]), nil, nil)
	}
	return e.run(ctx, o, def, state, sig)
}

// waitDeadline returns when a WAIT state with a timeout gives up: its timeout after the action that
// entered it (nil without a timeout).
func (e *Engine) waitDeadline(ctx context.Context, w *persistence.Workflow, s *State) (*time.Time, error) {
	if s.Timeout <= 0 {
		return nil, nil
	}
	last, err := e.store.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: []int64{w.ID}, Page: persistence.PageParams{Limit: 1, Desc: true}})
	if err != nil {
		return nil, err
	}
	entered := w.Modified
	if len(last) == 1 {
		entered = last[0].At
	}
	return timePtr(entered.Add(s.Timeout)), nil
}

// variableDeadline is the deadline a WAIT state reads from the workflow's variables
// (WaitFor.DeadlineVariable), nil when it has none or the variable holds no time.
func variableDeadline(w *persistence.Workflow, s *State) *time.Time {
	if s.WaitFor.DeadlineVariable == "" || s.Handler == nil || len(w.Variables) == 0 {
		return nil
	}
	var vars map[string]json.RawMessage
	if json.Unmarshal(w.Variables, &vars) != nil {
		return nil
	}
	var t *time.Time
	if raw, ok := vars[s.WaitFor.DeadlineVariable]; !ok || json.Unmarshal(raw, &t) != nil || t == nil {
		return nil
	}
	return t
}

// waitSatisfied reports whether a WAIT state may go on, with the signal it consumes.
func (e *Engine) waitSatisfied(ctx context.Context, w *persistence.Workflow, s *State) (bool, *persistence.Signal, error) {
	if s.WaitFor.Signal != "" {
		pending, err := e.store.SignalPending(ctx, []int64{w.ID}, s.WaitFor.Signal)
		if err != nil {
			return false, nil, err
		}
		sig := pending[w.ID]
		return sig != nil, sig, nil
	}
	active, err := e.store.WorkflowActiveChildren(ctx, []int64{w.ID})
	if err != nil {
		return false, nil, err
	}
	return active[w.ID] == 0, nil, nil
}

type stepResult struct {
	next Next
	err  error
}

// run calls a state's handler with its deadline and turns what it returns into the outcome.
func (e *Engine) run(ctx context.Context, o *outcome, def *Definition, state *State, sig *persistence.Signal) *outcome {
	w := o.workflow
	if state.Handler == nil {
		return e.failure(o, def, state, NonRetryable(fmt.Errorf("state %q has no handler on this node", state.Name)), persistence.TaskFailed)
	}
	vars := map[string]json.RawMessage{}
	if len(w.Variables) > 0 {
		if err := json.Unmarshal(w.Variables, &vars); err != nil {
			return e.failure(o, def, state, fmt.Errorf("error decoding variables: %w", err), persistence.TaskFailed)
		}
	}
	timeout := def.TimeoutOf(state)
	// ctx ends only when the worker gives up on its drain: the step is cancelled then too.
	stepCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	forget := e.trackRunning(w.ID, w.Version, o.executorID, cancel)
	defer forget()
	sc := &StepContext{Context: stepCtx, engine: e, workflow: w, attempt: w.Retries + 1, variables: vars,
		changed: map[string]bool{}, signal: sig}

	done := make(chan stepResult, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- stepResult{err: fmt.Errorf("step panicked: %v\n%s", r, debug.Stack())}
			}
		}()
		next, err := state.Handler(sc)
		done <- stepResult{next: next, err: err}
	}()
	var res stepResult
	timer := time.NewTimer(timeout + stepGrace)
	defer timer.Stop()
	select {
	case res = <-done:
	case <-timer.C:
		// The handler ignores its context: record the timeout and leave it behind. Its late
		// writes are fenced off, and what it had buffered is dropped.
		return e.failure(o, def, state, fmt.Errorf("step did not return within its timeout of %s", timeout), persistence.TaskTimedOut)
	}
	switch {
	case sc.remote != nil && errors.Is(res.err, ErrRemotePending) && stepCtx.Err() == nil && (sc.remote.create != nil || sc.remote.existing != nil):
		return e.awaitRemote(o, def, state, sc)
	case res.err == nil && stepCtx.Err() == nil:
		return recordRemote(failedAttempt(e.apply(o, def, state, res.next, sc, nil), res.next), sc)
	case errors.Is(stepCtx.Err(), context.DeadlineExceeded):
		return e.failure(o, def, state, fmt.Errorf("step timed out after %s: %v", timeout, res.err), persistence.TaskTimedOut)
	case stepCtx.Err() != nil:
		// Cancelled (the workflow was cancelled or paused): the completion is fenced off anyway.
		return e.failure(o, def, state, fmt.Errorf("step cancelled: %v", res.err), persistence.TaskCancelled)
	default:
		o.collect(sc)
		return recordRemote(e.failure(o, def, state, res.err, persistence.TaskFailed), sc)
	}
}

// collect keeps what a step buffered (logs, variables); failure drops the variables again.
func (o *outcome) collect(sc *StepContext) {
	if sc == nil {
		return
	}
	o.logs = sc.logs
	if len(sc.changed) > 0 {
		o.vars = map[string]json.RawMessage{}
		for _, k := range sc.changedKeys() {
			if v, ok := sc.variables[k]; ok {
				o.vars[k] = v
			} else {
				o.vars[k] = json.RawMessage("null")
			}
		}
	}
}

// keep returns a completion that leaves the workflow where it is.
func (e *Engine) keep(w *persistence.Workflow, status persistence.Status) persistence.WorkflowCompletion {
	return persistence.WorkflowCompletion{ID: w.ID, ExecutorID: *w.ExecutorID, ClaimedVersion: w.Version, Status: status,
		State: w.State, StateText: w.StateText, Retries: w.Retries, Variables: w.Variables, LastError: w.LastError}
}

// apply turns a successful step's Next into the outcome.
func (e *Engine) apply(o *outcome, def *Definition, state *State, next Next, sc *StepContext, _ error) *outcome {
	w := o.workflow
	now := persistence.Now()
	o.def = def
	o.collect(sc)
	if sc != nil {
		o.children = sc.children
	}
	c := e.keep(w, persistence.StatusInProgress)
	c.LastError = nil
	c.StateText = strPtr(next.text)
	target := state
	switch next.kind {
	case nextMove:
		to, ok := def.State(next.state)
		if !ok || !def.canMove(state, next.state) {
			return e.failure(o, def, state, NonRetryable(fmt.Errorf("state %q cannot move to %q (allowed: %v)", state.Name, next.state, state.Next)), persistence.TaskFailed)
		}
		if !next.at.IsZero() && CheckTime("at", next.at) != nil {
			return e.failure(o, def, state, NonRetryable(fmt.Errorf("MoveToAt(%q, %s): times must lie in the years 0001 to 9999 (UTC)",
				next.state, next.at.UTC().Format(time.RFC3339Nano))), persistence.TaskFailed)
		}
		target = to
		c.Retries = 0
	case nextFinish:
		target = def.firstOfKind(End)
		c.Retries = 0
	case nextFail:
		target = def.firstOfKind(ErrorKind)
		c.LastError = strPtr(next.text)
		if target == nil {
			target = state
			c.Status = persistence.StatusManual
		}
	case nextManual:
		c.Status = persistence.StatusManual
	case nextRetry:
		c.NextActivation = timePtr(now.Add(next.delay))
	default:
		return e.failure(o, def, state, NonRetryable(errors.New("step returned no next action (use MoveTo, Finish, ...)")), persistence.TaskFailed)
	}
	if next.kind == nextMove || next.kind == nextFinish || (next.kind == nextFail && c.Status != persistence.StatusManual) {
		at := now
		if !next.at.IsZero() {
			at = persistence.UTC(next.at)
		}
		tmp := *w
		tmp.Finished = nil
		enterState(&tmp, target, at, now)
		c.Status, c.NextActivation, c.WaitSignal, c.Finished = tmp.Status, tmp.NextActivation, tmp.WaitSignal, tmp.Finished
		c.State = target.Name
		if target.Kind == Wait {
			o.wait = target.WaitFor
		}
	}
	if len(o.vars) > 0 {
		merged, err := mergeVariables(w.Variables, o.vars)
		if err != nil {
			return e.failure(o, def, state, err, persistence.TaskFailed)
		}
		c.Variables = merged
	}
	o.completion = c
	o.task = e.task(o, state, persistence.TaskSucceeded, nil, sc)
	o.action = &persistence.Action{WorkflowID: w.ID, Type: persistence.ActionStateExecution, FromState: &w.State, State: c.State,
		StateText: c.StateText, RetryNo: w.Retries, ExecutorID: &o.executorID, At: now}
	return o
}

// failure records a failed attempt: retry with backoff while the policy allows, then the ERROR
// state (status FAILED), or MANUAL when the definition has none.
func (e *Engine) failure(o *outcome, def *Definition, state *State, cause error, status persistence.TaskStatus) *outcome {
	w := o.workflow
	o.def = def
	now := persistence.Now()
	msg := cause.Error()
	c := e.keep(w, persistence.StatusInProgress)
	c.Retries = w.Retries + 1
	c.LastError = &msg
	c.WaitSignal = nil
	// A failed attempt's variable writes are discarded: the next attempt (or an operator's retry)
	// starts from what the last successful step left. Its logs are kept, to tell what happened.
	o.vars = nil
	policy := DefaultRetryPolicy
	if def != nil {
		policy = def.RetryPolicyOf(state)
	}
	switch {
	case !IsNonRetryable(cause) && c.Retries < policy.MaxAttempts:
		c.NextActivation = timePtr(now.Add(policy.Backoff(c.Retries)))
		if state != nil && state.Kind == Wait {
			c.Status = persistence.StatusWaiting
			c.WaitSignal = w.WaitSignal
		}
	case def != nil && def.firstOfKind(ErrorKind) != nil:
		errState := def.firstOfKind(ErrorKind)
		c.Status = persistence.StatusFailed
		c.State = errState.Name
		c.Finished = &now
	default:
		c.Status = persistence.StatusManual
	}
	c.StateText = &msg
	o.completion = c
	o.task = e.task(o, state, status, &msg, nil)
	o.action = &persistence.Action{WorkflowID: w.ID, Type: persistence.ActionStateExecutionFailed, FromState: &w.State,
		State: c.State, StateText: &msg, RetryNo: w.Retries, ExecutorID: &o.executorID, At: now}
	o.children = nil
	o.signal = nil
	return o
}

// taskTypeOf names what runs in a state: its handler, or a WAIT state's check (and handler).
func taskTypeOf(state *State) string {
	if state != nil && state.Kind == Wait {
		if state.Handler != nil {
			return "wait+handler"
		}
		return "wait"
	}
	return "handler"
}

// task builds the task instance of an attempt.
func (e *Engine) task(o *outcome, state *State, status persistence.TaskStatus, errText *string, sc *StepContext) *persistence.TaskInstance {
	now := persistence.Now()
	ti := &persistence.TaskInstance{WorkflowID: o.workflow.ID, State: o.workflow.State, TaskType: taskTypeOf(state), Attempt: o.workflow.Retries + 1,
		Status: status, ExecutorID: &o.executorID, Host: o.host, Started: o.started, Finished: &now, Error: errText}
	if sc != nil {
		ti.Output = sc.output
	}
	return ti
}

// complete writes a batch of outcomes in one transaction: each workflow row (only where the
// executor still holds it at the claimed version), then its task instance, action, variable
// changes, activity logs, consumed signal, children and change events. It returns the outcomes
// that were written; the others lost their claim and left no trace.
func (e *Engine) complete(ctx context.Context, outcomes []*outcome) ([]*outcome, error) {
	written, _, err := e.completeAndContinue(ctx, outcomes, nil)
	return written, err
}

// completeAndContinue is complete, except that a workflow whose next step is due now, and that keep
// accepts, stays claimed by its executor: it is returned (as it now is, EXECUTING at its new
// version) for the executor to run the next step at once, without releasing and claiming it again.
func (e *Engine) completeAndContinue(ctx context.Context, outcomes []*outcome, keep func(*outcome) bool) (written []*outcome, continued []*persistence.Workflow, err error) {
	if len(outcomes) == 0 {
		return nil, nil, nil
	}
	if first, later := splitAttempts(outcomes); len(later) > 0 {
		// Two attempts of one workflow (a late one of this node's former executor, declared dead,
		// and a new one): the fenced statement tells written rows apart by workflow only, so each
		// goes in its own transaction.
		if written, continued, err = e.completeAndContinue(ctx, first, keep); err != nil {
			return nil, nil, err
		}
		w2, c2, err := e.completeAndContinue(ctx, later, keep)
		return append(written, w2...), append(continued, c2...), err
	}
	// The rows to write: each outcome's completion, or, for a workflow kept for its next step, a
	// copy that stays EXECUTING under the executor. The outcomes themselves are left as they are,
	// so that a failed attempt can be retried (or decided differently) from scratch.
	now := persistence.Now()
	cs := make([]persistence.WorkflowCompletion, len(outcomes))
	for i, o := range outcomes {
		c := o.completion
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
	err = e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		written = written[:0]
		clear(wake)
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
			events = append(events, &persistence.ChangeEvent{WorkflowID: ch.ID, Type: EventCreated, Status: ch.Status, State: ch.State, At: now})
			wake[ch.ExecutorGroup] = true
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
			events = append(events, &persistence.ChangeEvent{WorkflowID: id, Type: EventWoken, Status: persistence.StatusInProgress, State: "", At: now})
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
	e.afterCommit(wake, len(written) > 0)
	e.notifyRemote(written)
	if len(kept) > 0 {
		wrote := make(map[*outcome]bool, len(written))
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
func endingParents(outcomes []*outcome) []int64 {
	var ids []int64
	for _, o := range outcomes {
		if o.completion.Status.Terminal() && o.workflow.ParentID != nil {
			ids = append(ids, *o.workflow.ParentID)
		}
	}
	return ids
}

// splitAttempts keeps the first outcome of each workflow in first and puts any other in later.
func splitAttempts(outcomes []*outcome) (first, later []*outcome) {
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
func (o *outcome) nextTimeout(state string) time.Duration {
	if o.def == nil {
		return DefaultStepTimeout
	}
	s, _ := o.def.State(state)
	return o.def.TimeoutOf(s)
}

// releaseFenced ends the claim of fenced-off outcomes whose executor still holds their workflow:
// an operator paused, cancelled or changed it while the step ran (a recovery would have taken the
// claim away). Their results are discarded; each attempt that ran is returned as a CANCELLED task
// instance to record, and the groups of released workflows are marked to wake.
func (e *Engine) releaseFenced(ctx context.Context, tx *persistence.Store, outcomes []*outcome, written map[int64]bool, wake map[string]bool) ([]*persistence.TaskInstance, error) {
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
func (o *outcome) continuation(c persistence.WorkflowCompletion, now time.Time) *persistence.Workflow {
	w := *o.workflow
	w.Status, w.State, w.StateText, w.NextActivation, w.Retries = c.Status, c.State, c.StateText, c.NextActivation, c.Retries
	w.Variables, w.WaitSignal, w.LastError, w.Finished, w.StepDeadline = c.Variables, c.WaitSignal, c.LastError, c.Finished, c.StepDeadline
	w.Version = c.ClaimedVersion + 1
	w.Modified = now
	return &w
}

// childWorkflow builds the row of a child a step asked for.
func (e *Engine) childWorkflow(ctx context.Context, tx *persistence.Store, defs map[string]*persistence.Definition, parent *outcome, req ChildRequest, now time.Time) (*persistence.Workflow, error) {
	key := fmt.Sprintf("%s\x00%d", req.Type, req.Version)
	def, ok := defs[key]
	if !ok {
		var err error
		if def, err = tx.DefinitionGet(ctx, persistence.DefinitionGetParams{Type: req.Type, Version: req.Version}); err != nil {
			return nil, NonRetryable(fmt.Errorf("error starting child of type %q: %w", req.Type, err))
		}
		defs[key] = def
	}
	if err := startable(def, "type"); err != nil {
		return nil, NonRetryable(fmt.Errorf("error starting child of type %q: %w", req.Type, err))
	}
	spec, err := e.specOfRow(def)
	if err != nil {
		return nil, err
	}
	_, input, err := decodeObject("input", req.Input)
	if err != nil {
		return nil, err
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
	wait *WaitFor
}

// wakeSatisfiedWaits wakes workflows that just entered a WAIT state whose condition already holds
// (a signal that arrived early, children that all ended). It runs after their rows were written, so
// a concurrent signal or child either sees them WAITING or is seen here.
func (e *Engine) wakeSatisfiedWaits(ctx context.Context, tx *persistence.Store, waiting []waiter, now time.Time) ([]int64, error) {
	if len(waiting) == 0 {
		return nil, nil
	}
	signals := map[int64]string{}
	var parents []int64
	for _, w := range waiting {
		if w.wait.Signal != "" {
			signals[w.id] = w.wait.Signal
		} else if w.wait.Children {
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

// failOutcome replaces an outcome that could not be written with a plain failed attempt (no
// children, variables or logs), so a step whose results the database refuses still moves on.
func (e *Engine) failOutcome(o *outcome, cause error) *outcome {
	fresh := &outcome{workflow: o.workflow, executorID: o.executorID, host: o.host, started: o.started, group: o.group}
	def, err := e.specOf(context.Background(), e.store, o.workflow)
	if err != nil {
		return e.failure(fresh, nil, nil, fmt.Errorf("error writing the step's result: %w", cause), persistence.TaskFailed)
	}
	state, _ := def.State(o.workflow.State)
	return e.failure(fresh, def, state, fmt.Errorf("error writing the step's result: %w", cause), persistence.TaskFailed)
}
