package persistence

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/uptrace/bun"
)

// Status is a workflow's lifecycle status (DESIGN section 2).
type Status string

// The workflow statuses.
const (
	StatusCreated    Status = "CREATED"
	StatusInProgress Status = "IN_PROGRESS"
	StatusExecuting  Status = "EXECUTING"
	StatusWaiting    Status = "WAITING"
	StatusPaused     Status = "PAUSED"
	StatusManual     Status = "MANUAL"
	StatusFinished   Status = "FINISHED"
	StatusFailed     Status = "FAILED"
	StatusCancelled  Status = "CANCELLED"
)

// The status sets the rules are written in, each defined once.
var (
	// terminalStatuses are the statuses of a workflow that has ended: it never runs again by itself.
	terminalStatuses = []Status{StatusFinished, StatusFailed, StatusCancelled}
	// claimableStatuses are the statuses a worker may claim once next_activation is due (the MySQL
	// schema's claim_group column and the partial due indexes list them too).
	claimableStatuses = []Status{StatusCreated, StatusInProgress, StatusWaiting}
)

// Terminal reports whether a workflow in this status will never run again by itself.
func (s Status) Terminal() bool { return slices.Contains(terminalStatuses, s) }

// HoldsSlot reports whether a workflow in this status holds its concurrency key's slot under
// WORKFLOW scope (flowHolding's statuses).
func (s Status) HoldsSlot() bool {
	return s == StatusInProgress || s == StatusExecuting || s == StatusWaiting
}

// TerminalStatuses returns the statuses of ended workflows (FINISHED, FAILED, CANCELLED).
func TerminalStatuses() []Status { return slices.Clone(terminalStatuses) }

// ActionType says why an action (one row of a workflow's history) was written.
type ActionType string

// The action types.
const (
	ActionStateExecution       ActionType = "STATE_EXECUTION"
	ActionStateExecutionFailed ActionType = "STATE_EXECUTION_FAILED"
	ActionExternalChange       ActionType = "EXTERNAL_CHANGE"
	ActionRecovery             ActionType = "RECOVERY"
)

// TaskStatus is the outcome of one execution attempt.
type TaskStatus string

// The task instance statuses.
const (
	TaskRunning   TaskStatus = "RUNNING"
	TaskSucceeded TaskStatus = "SUCCEEDED"
	TaskFailed    TaskStatus = "FAILED"
	TaskTimedOut  TaskStatus = "TIMED_OUT"
	TaskCancelled TaskStatus = "CANCELLED"
	TaskLost      TaskStatus = "LOST"
)

// ReleaseState says whether a definition may start new workflows.
type ReleaseState string

// The release states.
const (
	ReleaseOnline  ReleaseState = "ONLINE"
	ReleaseOffline ReleaseState = "OFFLINE"
)

// Definition is one stored version of a workflow definition. Spec holds the canonical JSON form
// (states, transitions, policies) whose sha256 is Checksum.
type Definition struct {
	bun.BaseModel `bun:"table:workflow_definitions,alias:d"`

	ID            int64           `bun:"id,pk,autoincrement"`
	Type          string          `bun:"type,notnull"`
	Version       int             `bun:"version,notnull"`
	Checksum      string          `bun:"checksum,notnull"`
	Description   string          `bun:"description,notnull"`
	Spec          json.RawMessage `bun:"spec,type:jsonb,notnull"`
	ExecutorGroup string          `bun:"executor_group,notnull"`
	ReleaseState  ReleaseState    `bun:"release_state,notnull"`
	Created       time.Time       `bun:"created,notnull"`
	Modified      time.Time       `bun:"modified,notnull"`
}

// Workflow is one workflow instance: a persistent state machine.
type Workflow struct {
	bun.BaseModel `bun:"table:workflows,alias:w"`

	ID                int64           `bun:"id,pk,autoincrement"`
	Type              string          `bun:"type,notnull"`
	DefinitionVersion int             `bun:"definition_version,notnull"`
	ExternalID        *string         `bun:"external_id"`
	BusinessKey       *string         `bun:"business_key"`
	LaunchToken       *string         `bun:"launch_token"`
	Status            Status          `bun:"status,notnull"`
	State             string          `bun:"state,notnull"`
	StateText         *string         `bun:"state_text"`
	NextActivation    *time.Time      `bun:"next_activation"`
	Retries           int             `bun:"retries,notnull"`
	Priority          int             `bun:"priority,notnull"`
	ExecutorGroup     string          `bun:"executor_group,notnull"`
	ExecutorID        *int64          `bun:"executor_id"`
	ParentID          *int64          `bun:"parent_id"`
	RootID            *int64          `bun:"root_id"`
	ParentActionID    *int64          `bun:"parent_action_id"`
	Input             json.RawMessage `bun:"input,type:jsonb,notnull"`
	Variables         json.RawMessage `bun:"variables,type:jsonb,notnull"`
	WaitSignal        *string         `bun:"wait_signal"`
	LastError         *string         `bun:"last_error"`
	StepDeadline      *time.Time      `bun:"step_deadline"`
	Created           time.Time       `bun:"created,notnull"`
	Modified          time.Time       `bun:"modified,notnull"`
	Started           *time.Time      `bun:"started"`
	Finished          *time.Time      `bun:"finished"`
	Version           int             `bun:"version,notnull"`
	// Steps counts the attempts the workflow ran (the step budget's count).
	Steps int `bun:"steps,notnull"`
	// ConcurrencyKey is the workflow's key under its type's concurrency limit (nil: none).
	ConcurrencyKey *string `bun:"concurrency_key"`
	// DebounceKey is the key later starts with the same one fold into while it has not run (nil: none).
	DebounceKey *string `bun:"debounce_key"`
	// DataOmitted says the row was read without its input and variables (WorkflowListParams.OmitData).
	DataOmitted bool `bun:"-"`
	// Attributes are the workflow's search attributes where they were read with it (the live
	// subscriptions' filters read them; nil otherwise).
	Attributes map[string]AttributeValue `bun:"-"`
}

// Action is one row of a workflow's history: one change of its state.
type Action struct {
	bun.BaseModel `bun:"table:actions,alias:a"`

	ID             int64      `bun:"id,pk,autoincrement"`
	WorkflowID     int64      `bun:"workflow_id,notnull"`
	Type           ActionType `bun:"type,notnull"`
	FromState      *string    `bun:"from_state"`
	State          string     `bun:"state,notnull"`
	StateText      *string    `bun:"state_text"`
	RetryNo        int        `bun:"retry_no,notnull"`
	ExecutorID     *int64     `bun:"executor_id"`
	Actor          *string    `bun:"actor"`
	TaskInstanceID *int64     `bun:"task_instance_id"`
	At             time.Time  `bun:"at,notnull"`
}

// ActionVariable is one variable an action set: its JSON value (null when the action removed it).
type ActionVariable struct {
	bun.BaseModel `bun:"table:action_variables,alias:av"`

	WorkflowID int64           `bun:"workflow_id,pk"`
	ActionID   int64           `bun:"action_id,pk"`
	Key        string          `bun:"key,pk"`
	Value      json.RawMessage `bun:"value,type:jsonb"`
}

// TaskInstance is one execution attempt of one state by a worker.
type TaskInstance struct {
	bun.BaseModel `bun:"table:task_instances,alias:ti"`

	ID         int64           `bun:"id,pk,autoincrement"`
	WorkflowID int64           `bun:"workflow_id,notnull"`
	State      string          `bun:"state,notnull"`
	TaskType   string          `bun:"task_type,notnull"`
	Attempt    int             `bun:"attempt,notnull"`
	Status     TaskStatus      `bun:"status,notnull"`
	ExecutorID *int64          `bun:"executor_id"`
	Host       string          `bun:"host,notnull"`
	Started    time.Time       `bun:"started,notnull"`
	Finished   *time.Time      `bun:"finished"`
	Output     json.RawMessage `bun:"output,type:jsonb"`
	Error      *string         `bun:"error"`
}

// SideEffect is a non-deterministic value a step recorded, returned again when the step re-runs.
type SideEffect struct {
	bun.BaseModel `bun:"table:side_effects,alias:se"`

	ID         int64           `bun:"id,pk,autoincrement"`
	WorkflowID int64           `bun:"workflow_id,notnull"`
	Key        string          `bun:"key,notnull"`
	ValueType  string          `bun:"value_type,notnull"`
	Value      json.RawMessage `bun:"value,type:jsonb,notnull"`
	Created    time.Time       `bun:"created,notnull"`
}

// ActivityLog is one entry a step logged.
type ActivityLog struct {
	bun.BaseModel `bun:"table:activity_logs,alias:al"`

	ID             int64     `bun:"id,pk,autoincrement"`
	WorkflowID     int64     `bun:"workflow_id,notnull"`
	TaskInstanceID *int64    `bun:"task_instance_id"`
	Name           string    `bun:"name,notnull"`
	Value          string    `bun:"value,notnull"`
	At             time.Time `bun:"at,notnull"`
}

// Executor is a running (or stopped, or expired) node's worker pool.
type Executor struct {
	bun.BaseModel `bun:"table:executors,alias:e"`

	ID            int64      `bun:"id,pk,autoincrement"`
	Host          string     `bun:"host,notnull"`
	PID           int        `bun:"pid,notnull"`
	ExecutorGroup string     `bun:"executor_group,notnull"`
	Started       time.Time  `bun:"started,notnull"`
	Active        time.Time  `bun:"active,notnull"`
	Expires       time.Time  `bun:"expires,notnull"`
	Stopped       *time.Time `bun:"stopped"`
	// SessionLock says the executor holds a database session lock while its process lives, so
	// the other nodes declare it dead as soon as that session ends, before its expiry.
	SessionLock bool `bun:"session_lock,notnull"`
	// Types are the definition types its pool claims, comma-separated, as its last claim named
	// them (nil: not recorded yet).
	Types *string `bun:"types"`
}

// Alive reports whether the executor has not stopped and its heartbeat has not expired at now.
func (e *Executor) Alive(now time.Time) bool {
	return e.Stopped == nil && e.Expires.After(now)
}

// Signal is an external message to a workflow; it waits, unconsumed, until a state consumes it.
type Signal struct {
	bun.BaseModel `bun:"table:signals,alias:s"`

	ID               int64           `bun:"id,pk,autoincrement"`
	WorkflowID       int64           `bun:"workflow_id,notnull"`
	Name             string          `bun:"name,notnull"`
	Payload          json.RawMessage `bun:"payload,type:jsonb"`
	IdempotencyKey   *string         `bun:"idempotency_key"`
	Created          time.Time       `bun:"created,notnull"`
	Consumed         *time.Time      `bun:"consumed"`
	ConsumedActionID *int64          `bun:"consumed_action_id"`
}

// FormSubmission is the data a person submitted for a user task (a MANUAL or WAIT state).
type FormSubmission struct {
	bun.BaseModel `bun:"table:form_submissions,alias:fs"`

	ID          int64           `bun:"id,pk,autoincrement"`
	WorkflowID  int64           `bun:"workflow_id,notnull"`
	State       string          `bun:"state,notnull"`
	Data        json.RawMessage `bun:"data,type:jsonb,notnull"`
	SubmittedBy string          `bun:"submitted_by,notnull"`
	Signature   *string         `bun:"signature"`
	Created     time.Time       `bun:"created,notnull"`
}

// Schedule starts workflows of a definition type on a cron expression.
type Schedule struct {
	bun.BaseModel `bun:"table:schedules,alias:sc"`

	ID int64 `bun:"id,pk,autoincrement"`
	// Name is the schedule's optional unique name (nil: none).
	Name           *string         `bun:"name"`
	DefinitionType string          `bun:"definition_type,notnull"`
	Cron           string          `bun:"cron,notnull"`
	Timezone       string          `bun:"timezone,notnull"`
	StartAt        *time.Time      `bun:"start_at"`
	EndAt          *time.Time      `bun:"end_at"`
	Input          json.RawMessage `bun:"input,type:jsonb,notnull"`
	Priority       int             `bun:"priority,notnull"`
	Paused         bool            `bun:"paused,notnull"`
	OverlapPolicy  string          `bun:"overlap_policy,notnull"`
	NextFire       *time.Time      `bun:"next_fire"`
	LastFire       *time.Time      `bun:"last_fire"`
	// SkippedFires counts the fire times that started no run (SKIP overlap, or too late to make up).
	SkippedFires int64 `bun:"skipped_fires,notnull"`
	// AlertRuleID is the schedule's own alert rule (nil: none).
	AlertRuleID *int64    `bun:"alert_rule_id"`
	Created     time.Time `bun:"created,notnull"`
	Modified    time.Time `bun:"modified,notnull"`
}

// IdempotencyKey records which workflow an operation with a client-chosen key acted on.
type IdempotencyKey struct {
	bun.BaseModel `bun:"table:idempotency_keys,alias:ik"`

	Operation  string `bun:"operation,pk"`
	Key        string `bun:"key,pk"`
	WorkflowID int64  `bun:"workflow_id,notnull"`
	// RequestHash fingerprints the request the key was first used with ("" for keys stored before
	// it was recorded).
	RequestHash string    `bun:"request_hash,notnull"`
	Created     time.Time `bun:"created,notnull"`
}

// ChangeEvent is one change of a workflow, written in the transaction that made it; subscriptions
// read them in order after a cursor.
type ChangeEvent struct {
	bun.BaseModel `bun:"table:change_events,alias:ce"`

	ID         int64     `bun:"id,pk,autoincrement"`
	TxID       int64     `bun:"txid,scanonly"`
	WorkflowID int64     `bun:"workflow_id,notnull"`
	Type       string    `bun:"type,notnull"`
	ActionID   *int64    `bun:"action_id"`
	Status     Status    `bun:"status,notnull"`
	State      string    `bun:"state,notnull"`
	At         time.Time `bun:"at,notnull"`
}

// APIToken is a credential for the GraphQL API; only its sha256 hash is stored.
type APIToken struct {
	bun.BaseModel `bun:"table:api_tokens,alias:t"`

	ID   int64  `bun:"id,pk,autoincrement"`
	Name string `bun:"name,notnull"`
	Hash string `bun:"hash,notnull"`
	Role string `bun:"role,notnull"`
	// Functions lists the functions a worker token may serve, comma-separated (nil for other roles).
	Functions *string    `bun:"functions"`
	Created   time.Time  `bun:"created,notnull"`
	LastUsed  *time.Time `bun:"last_used"`
	Revoked   *time.Time `bun:"revoked"`
	// ExpiresAt is when the token stops being accepted (nil: never).
	ExpiresAt *time.Time `bun:"expires_at"`
}
