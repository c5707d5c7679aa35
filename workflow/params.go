// The operations' parameters and results: what a caller passes to start, change, signal and schedule
// workflows, and what it gets back.

package workflow

import (
	"encoding/json"
	"time"

	"github.com/cairnflow/cairn/persistence"
)

// StartParams is the input of Start: a new workflow of a registered, ONLINE type.
type StartParams struct {
	Type string
	// ExternalID is unique per type: starting again with the same one returns the existing workflow.
	ExternalID  string
	BusinessKey string
	LaunchToken string
	// Input is a JSON object handed to the steps (empty: {}).
	Input    json.RawMessage
	Priority int
	// StartAt delays the first step (nil: now).
	StartAt *time.Time
	// IdempotencyKey makes the start idempotent: the same key returns the first result.
	IdempotencyKey string
	// Variables are the initial variables (a JSON object).
	Variables json.RawMessage
	// Attributes are the workflow's search attributes: a flat JSON object of strings, numbers,
	// booleans and times (RFC 3339 strings), which the workflows query filters by.
	Attributes json.RawMessage
	// ConcurrencyKey is the workflow's key under its type's concurrency limit ("": the limit's key
	// expression over the input decides, or the workflow shares the type's keyless pool).
	ConcurrencyKey string
	// Debounce folds this start into the workflow of the same type and debounce key that has not
	// run yet, if any: its input becomes this one's and it runs one period after this start.
	Debounce *Debounce
}

// Debounce collapses a burst of starts of one key into one workflow.
type Debounce struct {
	Key    string
	Period time.Duration
}

// StartResult is one started (or found) workflow.
type StartResult struct {
	Workflow *persistence.Workflow
	// Created is false when an existing workflow was returned (same externalId or idempotency key).
	Created bool
	// Debounced says the start folded into Workflow, which had not run yet (same debounce key).
	Debounced bool
}

// Event types written to the change-event stream besides the action types.
const (
	EventCreated  = "CREATED"
	EventSignaled = "SIGNALED"
	EventWoken    = "WOKEN"
)

// ChangeParams is the common input of the operations on one workflow.
type ChangeParams struct {
	ID     int64
	Reason string
	// Actor is who asks (recorded on the action).
	Actor string
	// IdempotencyKey makes the operation idempotent: the same key returns the workflow unchanged;
	// the same key with another request is a CONFLICT.
	IdempotencyKey string
}

// RetryParams is the input of Retry.
type RetryParams struct {
	ChangeParams
	// State to run again ("" = the state that failed).
	State string
}

// UpdateParams is the input of Update: an operator's change of a workflow (nFlow's external change).
type UpdateParams struct {
	ChangeParams
	// State moves the workflow to this state (its status follows the state's kind).
	State *string
	// StateText sets the state text.
	StateText *string
	// NextActivation reschedules the workflow; ClearNextActivation unschedules it.
	NextActivation      *time.Time
	ClearNextActivation bool
	// Variables are merged into the workflow's variables; a null value removes a key.
	Variables json.RawMessage
	// Attributes are merged into the workflow's search attributes; a null value removes one.
	Attributes json.RawMessage
}

// SignalParams is the input of Signal.
type SignalParams struct {
	ID             int64
	Name           string
	Payload        json.RawMessage
	IdempotencyKey string
	Actor          string
}

// Overlap policies of a schedule: what a fire does while the previous run is still going.
const (
	// OverlapSkip skips the fire.
	OverlapSkip = "SKIP"
	// OverlapAllow starts another run.
	OverlapAllow = "ALLOW"
)

// ScheduleParams is the input of CreateSchedule.
type ScheduleParams struct {
	Type     string
	Cron     string
	Timezone string // IANA name; UTC when empty
	StartAt  *time.Time
	EndAt    *time.Time
	Input    []byte // a JSON object handed to every run
	Priority int
	// OverlapPolicy is OverlapSkip (default) or OverlapAllow.
	OverlapPolicy string
	// Name is the schedule's optional unique name (nil: none).
	Name *string
	// Actor is who makes the schedule, for the audit log ("" : api).
	Actor string
	// AlertRuleID, when set, is an alert rule the schedule's runs alert through (besides the
	// rules that match them).
	AlertRuleID *int64
}

// UpdateScheduleParams is the input of UpdateSchedule: only the fields given (not nil) change.
type UpdateScheduleParams struct {
	ID            int64
	Cron          *string
	Timezone      *string
	StartAt       *time.Time
	EndAt         *time.Time
	Input         []byte // nil: unchanged
	Priority      *int
	OverlapPolicy *string
	// Actor is who changes the schedule, for the audit log.
	Actor string
}

// SubmitFormParams is the input of SubmitForm.
type SubmitFormParams struct {
	ID int64
	// Data is what the person filled in: a JSON object valid against the state's form schema.
	Data        json.RawMessage
	SubmittedBy string
	Signature   string
	// IdempotencyKey makes the submission idempotent: the same key submits once.
	IdempotencyKey string
}

// MaxEventDeliveries bounds the workflows one published event is delivered to.
const MaxEventDeliveries = 1000
