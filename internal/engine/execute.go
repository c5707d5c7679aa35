package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/cairnflow/cairn/workflow"

	"github.com/cairnflow/cairn/persistence"
)

// Outcome is the result of running one claimed workflow's step: everything Complete writes for it.
// The worker pool (internal/pool) carries it from Execute to Complete; only the engine reads its
// contents.
type Outcome struct {
	workflow   *persistence.Workflow
	executorID int64
	host       string
	started    time.Time

	completion persistence.WorkflowCompletion
	task       *persistence.TaskInstance // nil: nothing ran (a WAIT state still waiting)
	action     *persistence.Action       // nil: no change of state to record
	vars       map[string]json.RawMessage
	attrs      map[string]*persistence.AttributeValue // search attributes the step set (nil: removed)
	logs       []*persistence.ActivityLog
	children   []workflow.ChildRequest
	signals    []workflow.SignalRequest // sent by this step (step_effects.go)
	cancels    []workflow.CancelRequest
	signal     *persistence.Signal  // consumed by this step
	wait       *workflow.WaitFor    // entered a WAIT state: check whether it is already satisfied
	def        *workflow.Definition // the definition the step ran (nil: it could not be loaded)
	// group is the executor group, to wake when the outcome makes work due now.
	group string
	// The remote task the outcome creates, waits for again, or records (see remote.go).
	remoteCreate  *persistence.RemoteTask
	remoteWait    int64
	remoteConsume int64
}

// WorkflowID is the ID of the workflow the outcome belongs to.
func (o *Outcome) WorkflowID() int64 { return o.workflow.ID }

// WorkflowType is the type of the workflow the step ran for.
func (o *Outcome) WorkflowType() string { return o.workflow.Type }

// ConcurrencyKey is the workflow's concurrency key ("": none).
func (o *Outcome) ConcurrencyKey() string { return o.workflow.FlowKey() }

// ClaimedVersion is the workflow's version when its executor claimed it for this attempt: with the
// workflow ID, it names the attempt.
func (o *Outcome) ClaimedVersion() int { return o.workflow.Version }

// Status is the status the workflow will have once the outcome is written.
func (o *Outcome) Status() persistence.Status { return o.completion.Status }

// TaskStatus is the status of the attempt ("" when nothing ran).
func (o *Outcome) TaskStatus() persistence.TaskStatus {
	if o.task == nil {
		return ""
	}
	return o.task.Status
}

// ExecuteParams is the input of Execute: a workflow its executor claimed.
type ExecuteParams struct {
	Workflow   *persistence.Workflow
	ExecutorID int64
	Host       string
}

// stepGrace is how long past its deadline a handler may take to return before the attempt is
// recorded as timed out without it (its goroutine is abandoned).
const stepGrace = 2 * time.Second

// execute runs the current state of a workflow claimed by an executor and returns the outcome to
// pass to complete. It never panics and never blocks past the state's timeout (plus a short grace):
// a handler that panics is a failed attempt, one that does not return in time a timed-out attempt.
func (e *Engine) execute(ctx context.Context, p ExecuteParams) *Outcome {
	w := p.Workflow
	now := persistence.Now()
	o := &Outcome{workflow: w, executorID: p.ExecutorID, host: p.Host, started: now, group: w.ExecutorGroup}
	def, err := e.specOf(ctx, e.store, w)
	if err != nil {
		return e.failure(o, nil, nil, fmt.Errorf("error loading definition %s v%d: %w", w.Type, w.DefinitionVersion, err), persistence.TaskFailed)
	}
	state, ok := def.State(w.State)
	if !ok {
		return e.failure(o, def, nil, workflow.NonRetryable(fmt.Errorf("definition %s v%d has no state %q", w.Type, w.DefinitionVersion, w.State)), persistence.TaskFailed)
	}
	if spent := e.outOfSteps(o, def, state); spent != nil {
		return spent
	}
	if state.Kind != workflow.Wait {
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
		return e.apply(o, def, state, workflow.MoveTo(state.Next[0]), nil, nil)
	}
	return e.run(ctx, o, def, state, sig)
}

// waitDeadline returns when a WAIT state with a timeout gives up: its timeout after the action that
// entered it (nil without a timeout).
func (e *Engine) waitDeadline(ctx context.Context, w *persistence.Workflow, s *workflow.State) (*time.Time, error) {
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
func variableDeadline(w *persistence.Workflow, s *workflow.State) *time.Time {
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
func (e *Engine) waitSatisfied(ctx context.Context, w *persistence.Workflow, s *workflow.State) (bool, *persistence.Signal, error) {
	if s.WaitFor.TakesSignals() && s.WaitFor.Column() == persistence.WaitSignalAmong {
		sig, err := e.store.SignalPendingAmong(ctx, w.ID, s.WaitFor.Names())
		return sig != nil, sig, err
	}
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
	next workflow.Next
	err  error
}

// run calls a state's handler with its deadline and turns what it returns into the outcome.
func (e *Engine) run(ctx context.Context, o *Outcome, def *workflow.Definition, state *workflow.State, sig *persistence.Signal) *Outcome {
	w := o.workflow
	if state.Handler == nil {
		return e.failure(o, def, state, workflow.NonRetryable(fmt.Errorf("state %q has no handler on this node", state.Name)), persistence.TaskFailed)
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
	sc := &stepContext{Context: stepCtx, engine: e, workflow: w, attempt: w.Retries + 1, variables: vars,
		changed: map[string]bool{}, signal: sig}

	done := make(chan stepResult, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				// The stack names source paths and the panic's value may hold anything: they stay in
				// the node's log, and the API shows the incident that finds them there.
				incident := newIncident()
				e.log.Error("step panicked", "incident", incident, "workflow", w.ID, "type", w.Type, "state", state.Name,
					"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				done <- stepResult{err: incidentProblem(incident)}
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
	case sc.remote != nil && errors.Is(res.err, workflow.ErrRemotePending) && stepCtx.Err() == nil && (sc.remote.create != nil || sc.remote.existing != nil):
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
func (o *Outcome) collect(sc *stepContext) {
	if sc == nil || sc.overLimit != nil { // over a limit: nothing it buffered is stored (step_limits.go)
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

// taskTypeOf names what runs in a state: its handler, or a WAIT state's check (and handler).
func taskTypeOf(state *workflow.State) string {
	if state != nil && state.Kind == workflow.Wait {
		if state.Handler != nil {
			return "wait+handler"
		}
		return "wait"
	}
	return "handler"
}

// task builds the task instance of an attempt.
func (e *Engine) task(o *Outcome, state *workflow.State, status persistence.TaskStatus, errText *string, sc *stepContext) *persistence.TaskInstance {
	now := persistence.Now()
	ti := &persistence.TaskInstance{WorkflowID: o.workflow.ID, State: o.workflow.State, TaskType: taskTypeOf(state), Attempt: o.workflow.Retries + 1,
		Status: status, ExecutorID: &o.executorID, Host: o.host, Started: o.started, Finished: &now, Error: errText}
	if sc != nil {
		ti.Output = sc.output
	}
	return ti
}

// FailOutcome replaces an outcome that could not be written with a plain failed attempt (no
// children, variables or logs), so a step whose results the database refuses still moves on.
func (e *Engine) FailOutcome(o *Outcome, cause error) *Outcome {
	fresh := &Outcome{workflow: o.workflow, executorID: o.executorID, host: o.host, started: o.started, group: o.group}
	def, err := e.specOf(context.Background(), e.store, o.workflow)
	if err != nil {
		return e.failure(fresh, nil, nil, fmt.Errorf("error writing the step's result: %w", cause), persistence.TaskFailed)
	}
	state, _ := def.State(o.workflow.State)
	return e.failure(fresh, def, state, fmt.Errorf("error writing the step's result: %w", cause), persistence.TaskFailed)
}
