package workflow

import (
	"encoding/json"

	"github.com/cairnflow/cairn/persistence"
)

// The actions of a bulk operation: each is the operation of the same name on every target.
const (
	BulkRetry  = "RETRY"
	BulkCancel = "CANCEL"
	BulkPause  = "PAUSE"
	BulkResume = "RESUME"
	BulkSignal = "SIGNAL"
	BulkDelete = "DELETE"
)

// BulkActions are the actions a bulk operation may take.
var BulkActions = []string{BulkRetry, BulkCancel, BulkPause, BulkResume, BulkSignal, BulkDelete}

// BulkParams is the input of StartBulk: an action on every workflow a filter matches now.
type BulkParams struct {
	Action string
	Filter persistence.WorkflowFilter
	// FilterDoc is the filter as the caller wrote it, stored to show back (JSON; Filter's when empty).
	FilterDoc json.RawMessage
	// All confirms an empty filter: the action is meant for every workflow.
	All bool
	// DryRun counts what the filter matches and what the action would do, changing nothing.
	DryRun bool
	Reason string
	// Actor is who asks (recorded on the operation and on every action it writes).
	Actor string
	// State is the state a RETRY runs again ("" = the state that failed).
	State string
	// SignalName and SignalPayload are the signal a SIGNAL delivers.
	SignalName    string
	SignalPayload json.RawMessage
}

// Validate checks a bulk operation's strings and JSON.
func (p BulkParams) Validate() error {
	return firstError(
		CheckString("reason", p.Reason, MaxTextLength),
		CheckString("actor", p.Actor, MaxKeyLength),
		CheckString("state", p.State, MaxKeyLength),
		CheckString("signal.name", p.SignalName, MaxKeyLength),
		CheckJSON("signal.payload", p.SignalPayload),
	)
}

// DeleteParams is the input of Delete.
type DeleteParams struct {
	ID     int64
	Reason string
	Actor  string
}

// RerunParams is the input of Rerun: a new workflow started from an ended one.
type RerunParams struct {
	// ID is the ended workflow to run again.
	ID int64
	// Input replaces the original's input (nil: the same input).
	Input json.RawMessage
	// State is where the new workflow starts ("" = the definition's start state).
	State string
	// Latest runs the newest version of the definition instead of the original's.
	Latest bool
	Reason string
	Actor  string
}

// Validate checks a rerun's strings and JSON.
func (p RerunParams) Validate() error {
	return firstError(
		CheckJSON("input", p.Input),
		CheckString("state", p.State, MaxKeyLength),
		CheckString("reason", p.Reason, MaxTextLength),
		CheckString("actor", p.Actor, MaxKeyLength),
	)
}
