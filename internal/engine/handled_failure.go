package engine

import (
	"github.com/cairnflow/cairn/internal/step"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

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
