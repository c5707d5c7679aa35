package workflow

import (
	"github.com/cairnflow/cairn/persistence"
)

// AfterFailure says the attempt failed with problem although the step handled the failure and
// goes where n says (a Serverless Workflow try that retries its tasks or runs its catch): the
// attempt's task instance is FAILED with problem as its error, its action STATE_EXECUTION_FAILED,
// and the workflow's lastError is problem until a step succeeds. problem is RFC 7807 Problem
// Details as JSON, or a message; the state text is the Problem's title and detail unless n has a
// text.
func (n Next) AfterFailure(problem string) Next {
	n.failure = problem
	return n
}

// failedAttempt records a step that returned Fail, or a Next with AfterFailure, as the failed
// attempt it is: its task instance FAILED with the reason, not SUCCEEDED; a Problem's title and
// detail, not its JSON, are the state text.
func failedAttempt(o *outcome, next Next) *outcome {
	if o.task == nil || o.action == nil || o.action.Type != persistence.ActionStateExecution {
		return o // the step's result was refused: already a failed attempt
	}
	failure, text := next.failure, next.text
	if next.kind == nextFail {
		failure, text = next.text, ""
	}
	if failure == "" {
		return o
	}
	if text == "" {
		text = stateTextOf(failure)
	}
	o.task.Status, o.task.Error = persistence.TaskFailed, &failure
	o.action.StateText, o.completion.StateText = &text, &text
	if next.kind != nextFail {
		// Fail moves to the ERROR state, a change of state; a handled failure is a failed attempt.
		o.action.Type = persistence.ActionStateExecutionFailed
		if next.kind != nextFinish {
			o.completion.LastError = &failure
		}
	}
	return o
}
