// The one place a workflow's next state is decided: from what a step returned (apply, with
// failedAttempt for a failure the step handled), from a failed attempt (failure: retry with backoff,
// then the ERROR state or MANUAL), and on entering a state (enterState: due, waiting or ended).

package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/cairnflow/cairn/internal/step"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// apply turns a successful step's Next into the outcome.
func (e *Engine) apply(o *Outcome, def *workflow.Definition, state *workflow.State, next workflow.Next, sc *stepContext, _ error) *Outcome {
	w := o.workflow
	now := persistence.Now()
	n := step.Next(next)
	o.def = def
	if err := e.checkStepLimits(sc); err != nil {
		return e.failure(o, def, state, err, persistence.TaskFailed)
	}
	o.collect(sc)
	if sc != nil {
		o.children, o.signals, o.cancels = sc.children, sc.signals, sc.cancels
		o.attrs = sc.attrs
	}
	c := e.keep(w, persistence.StatusInProgress)
	c.LastError = nil
	c.StateText = strPtr(n.Text())
	target := state
	switch n.Kind() {
	case step.Move:
		to, ok := def.State(n.State())
		if !ok || !def.CanMove(state, n.State()) {
			return e.failure(o, def, state, workflow.NonRetryable(fmt.Errorf("state %q cannot move to %q (allowed: %v)", state.Name, n.State(), state.Next)), persistence.TaskFailed)
		}
		if !n.At().IsZero() && workflow.CheckTime("at", n.At()) != nil {
			return e.failure(o, def, state, workflow.NonRetryable(fmt.Errorf("MoveToAt(%q, %s): times must lie in the years 0001 to 9999 (UTC)",
				n.State(), n.At().UTC().Format(time.RFC3339Nano))), persistence.TaskFailed)
		}
		target = to
		c.Retries = 0
	case step.Finish:
		target = def.FirstOfKind(workflow.End)
		c.Retries = 0
	case step.Fail:
		target = def.FirstOfKind(workflow.ErrorKind)
		c.LastError = strPtr(n.Text())
		c.StateText = strPtr(stateTextOf(n.Text()))
		if target == nil {
			target = state
			c.Status = persistence.StatusManual
		}
	case step.Manual:
		c.Status = persistence.StatusManual
	case step.Retry:
		c.NextActivation = timePtr(now.Add(n.Delay()))
	default:
		return e.failure(o, def, state, workflow.NonRetryable(errors.New("step returned no next action (use MoveTo, Finish, ...)")), persistence.TaskFailed)
	}
	if n.Kind() == step.Move || n.Kind() == step.Finish || (n.Kind() == step.Fail && c.Status != persistence.StatusManual) {
		at := now
		if !n.At().IsZero() {
			at = persistence.UTC(n.At())
		}
		tmp := *w
		tmp.Finished = nil
		enterState(&tmp, target, at, now)
		c.Status, c.NextActivation, c.WaitSignal, c.Finished = tmp.Status, tmp.NextActivation, tmp.WaitSignal, tmp.Finished
		c.State = target.Name
		if target.Kind == workflow.Wait {
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
	if n.Kind() == step.Fail {
		// The step failed its workflow: its attempt is the failing one, with the reason.
		o.task.Status, o.task.Error = persistence.TaskFailed, c.LastError
	}
	o.action = &persistence.Action{WorkflowID: w.ID, Type: persistence.ActionStateExecution, FromState: &w.State, State: c.State,
		StateText: c.StateText, RetryNo: w.Retries, ExecutorID: &o.executorID, At: now}
	return o
}

// failure records a failed attempt: retry with backoff while the policy allows, then the ERROR
// state (status FAILED), or MANUAL when the definition has none.
func (e *Engine) failure(o *Outcome, def *workflow.Definition, state *workflow.State, cause error, status persistence.TaskStatus) *Outcome {
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
	policy := workflow.DefaultRetryPolicy
	if def != nil {
		policy = def.RetryPolicyOf(state)
	}
	if !workflow.IsNonRetryable(cause) && c.Retries < policy.MaxAttempts {
		c.NextActivation = timePtr(now.Add(policy.Backoff(c.Retries)))
		if state != nil && state.Kind == workflow.Wait {
			c.Status = persistence.StatusWaiting
			c.WaitSignal = w.WaitSignal
		}
	} else {
		c.Status, c.State, c.Finished = attemptsSpent(def, w.State, now)
	}
	c.StateText = strPtr(stateTextOf(msg))
	o.completion = c
	o.task = e.task(o, state, status, &msg, nil)
	o.action = &persistence.Action{WorkflowID: w.ID, Type: persistence.ActionStateExecutionFailed, FromState: &w.State,
		State: c.State, StateText: c.StateText, RetryNo: w.Retries, ExecutorID: &o.executorID, At: now}
	o.children, o.signals, o.cancels = nil, nil, nil
	o.signal = nil
	return o
}

// attemptsSpent is where a workflow goes when a failed attempt was its last: the definition's ERROR
// state (status FAILED, finished now), or MANUAL status in the state it is in when it has none.
func attemptsSpent(def *workflow.Definition, state string, now time.Time) (persistence.Status, string, *time.Time) {
	if def != nil {
		if errState := def.FirstOfKind(workflow.ErrorKind); errState != nil {
			return persistence.StatusFailed, errState.Name, &now
		}
	}
	return persistence.StatusManual, state, nil
}

// failedAttempt records a step that returned Fail, or a Next with AfterFailure, as the failed
// attempt it is: its task instance FAILED with the reason, not SUCCEEDED; a Problem's title and
// detail, not its JSON, are the state text.
func failedAttempt(o *Outcome, next workflow.Next) *Outcome {
	if o.task == nil || o.action == nil || o.action.Type != persistence.ActionStateExecution {
		return o // the step's result was refused: already a failed attempt
	}
	n := step.Next(next)
	failure, text := n.Failure(), n.Text()
	if n.Kind() == step.Fail {
		failure, text = n.Text(), ""
	}
	if failure == "" {
		return o
	}
	if text == "" {
		text = stateTextOf(failure)
	}
	o.task.Status, o.task.Error = persistence.TaskFailed, &failure
	o.action.StateText, o.completion.StateText = &text, &text
	if n.Kind() != step.Fail {
		// Fail moves to the ERROR state, a change of state; a handled failure is a failed attempt.
		o.action.Type = persistence.ActionStateExecutionFailed
		if n.Kind() != step.Finish {
			o.completion.LastError = &failure
		}
	}
	return o
}

// enterState sets a workflow's status and schedule for arriving in state s (due at `at`).
func enterState(w *persistence.Workflow, s *workflow.State, at, now time.Time) {
	w.WaitSignal = nil
	w.ExecutorID = nil
	w.StepDeadline = nil
	switch s.Kind {
	case workflow.Start, workflow.Normal:
		w.Status = persistence.StatusInProgress
		w.NextActivation = timePtr(at)
	case workflow.Wait:
		w.Status = persistence.StatusWaiting
		w.NextActivation = nil
		if s.Timeout > 0 {
			w.NextActivation = timePtr(now.Add(s.Timeout))
		}
		if !at.Equal(now) && (w.NextActivation == nil || at.Before(*w.NextActivation)) {
			w.NextActivation = timePtr(at)
		}
		if s.WaitFor != nil && s.WaitFor.TakesSignals() {
			col := s.WaitFor.Column()
			w.WaitSignal = &col
		}
	case workflow.Manual:
		w.Status = persistence.StatusManual
		w.NextActivation = nil
	case workflow.End:
		w.Status = persistence.StatusFinished
		w.NextActivation = nil
		w.Finished = timePtr(now)
	case workflow.ErrorKind:
		w.Status = persistence.StatusFailed
		w.NextActivation = nil
		w.Finished = timePtr(now)
	}
}
