package engine

import (
	"time"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// The errors the operations return, each a *workflow.Error with its code.

func invalid(field, format string, args ...any) *workflow.Error {
	return workflow.NewError(workflow.CodeInvalidInput, field, format, args...)
}

func conflict(format string, args ...any) *workflow.Error {
	return workflow.NewError(workflow.CodeConflict, "", format, args...)
}

// conflictOn is a CONFLICT about one input field (an idempotency key reused for another request).
func conflictOn(field, format string, args ...any) *workflow.Error {
	return workflow.NewError(workflow.CodeConflict, field, format, args...)
}

func notFound(field, format string, args ...any) *workflow.Error {
	e := workflow.NewError(workflow.CodeNotFound, field, format, args...)
	e.Err = persistence.ErrNotFound
	return e
}

func workflowRef(id int64) workflow.Ref { return workflow.Ref{Kind: workflow.RefWorkflow, ID: id} }
func scheduleRef(id int64) workflow.Ref { return workflow.Ref{Kind: workflow.RefSchedule, ID: id} }

// firstError returns the first non-nil error.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// checkRange checks the times of a backfill.
func checkRange(from, to time.Time) error {
	return firstError(workflow.CheckTime("from", from), workflow.CheckTime("to", to))
}
