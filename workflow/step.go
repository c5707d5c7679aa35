package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cairnflow/cairn/internal/step"

	"github.com/cairnflow/cairn/persistence"
)

// StepFunc runs one state of a workflow. It returns what happens next; an error is a failed
// attempt, retried by the state's policy (wrap it with NonRetryable when retrying cannot help).
type StepFunc func(ctx StepContext) (Next, error)

// Next is what a step asks for when it returns: make it with MoveTo, MoveToAt, RetryAfter,
// GoManual, Finish or Fail. The zero Next asks for nothing, which fails the attempt.
type Next step.Next

// MoveTo moves the workflow to a state now.
func MoveTo(state string) Next { return Next(step.New(step.Move, state, time.Time{}, 0, "")) }

// MoveToAt moves the workflow to a state, to run at a time (a durable timer). For a WAIT state
// the time is when the workflow is woken even if what it waits for has not come (see
// WaitFor.DeadlineVariable).
func MoveToAt(state string, at time.Time) Next { return Next(step.New(step.Move, state, at, 0, "")) }

// RetryAfter runs the same state again after a delay, without counting a failure (polling).
func RetryAfter(d time.Duration) Next { return Next(step.New(step.Retry, "", time.Time{}, d, "")) }

// GoManual stops the workflow in its current state with status MANUAL, for a person to act.
func GoManual(text string) Next { return Next(step.New(step.Manual, "", time.Time{}, 0, text)) }

// Finish moves the workflow to its END state.
func Finish() Next { return Next(step.New(step.Finish, "", time.Time{}, 0, "")) }

// Fail moves the workflow to its ERROR state (MANUAL when it has none), without retrying.
func Fail(reason string) Next { return Next(step.New(step.Fail, "", time.Time{}, 0, reason)) }

// WithText sets the state text recorded with the move.
func (n Next) WithText(text string) Next { return Next(step.Next(n).WithText(text)) }

// ChildRequest is a child workflow a step starts; it is created when the step completes.
type ChildRequest struct {
	Type        string
	Input       json.RawMessage
	ExternalID  string
	BusinessKey string
	Priority    int
	// Version is the definition version the child runs (0: the newest).
	Version int
	// Detached starts a workflow of its own (no parent, not waited for) rather than a child.
	Detached bool
	// StartAt delays its first step (nil: now).
	StartAt *time.Time
}

// StepContext is what a step handler gets: the workflow, its input and variables, the signal it
// waited for, and the means to record side effects, log, start children, signal or cancel other
// workflows and call remote functions. It is a context.Context carrying the step's deadline,
// cancelled when the workflow is cancelled or paused. The engine running the step implements it;
// what a step writes through it is stored with the step's outcome, and dropped when the attempt
// fails.
type StepContext interface {
	context.Context

	// WorkflowID is the ID of the running workflow.
	WorkflowID() int64
	// Workflow returns the running workflow's row as it was claimed (read-only).
	Workflow() persistence.Workflow
	// State is the name of the running state.
	State() string
	// Attempt counts the runs of this state, from 1.
	Attempt() int
	// Input decodes the workflow's input into v.
	Input(v any) error
	// RawInput is the workflow's input as JSON.
	RawInput() json.RawMessage
	// Var decodes variable key into v and reports whether it is set.
	Var(key string, v any) (bool, error)
	// SetVar sets variable key to v (JSON-encoded); nil removes it. Recorded when the step
	// completes, with the action it belongs to. A value over the node's Limits is refused with a
	// *LimitError (non-retryable), and the attempt fails with it even if the handler goes on.
	SetVar(key string, v any) error
	// SetAttribute sets the workflow's search attribute name to v (a string, a number, a bool or
	// a time.Time); nil removes it. Written when the step completes (dropped when it fails). A name
	// or value the API would refuse is refused here with a *workflow.Error (INVALID_INPUT).
	SetAttribute(name string, v any) error
	// Log records an activity log entry, written when the step completes. A value longer than the
	// node's ValueBytes is cut; once a step's logs reach its VariablesBytes, the rest are dropped
	// (one entry says so): a step cannot fill the disk through its logs.
	Log(name, value string)
	// Signal returns the signal a WAIT state waited for (nil in other states).
	Signal() *persistence.Signal
	// SetOutput records the step's output on its task instance.
	SetOutput(v any) error
	// StartChild asks for a child workflow, created in the transaction that completes this step
	// (so a step that runs again starts no duplicate). Pair it with a WAIT state that waits for
	// children.
	StartChild(req ChildRequest)
	// SendSignal asks for a signal to another workflow, delivered in the transaction that
	// completes this step. A signal no workflow could take (no name, a payload that is not JSON
	// or over the node's Limits) is refused now.
	SendSignal(req SignalRequest) error
	// CancelWorkflow asks for a workflow (and its descendants) to be cancelled in the transaction
	// that completes this step.
	CancelWorkflow(req CancelRequest) error
	// Reader returns what the step may read beyond its own workflow.
	Reader() Reader
	// CallRemote calls a function served by remote workers, durably: the first run of the step
	// asks for a task and gets ErrRemotePending, which the handler returns as its error (so the
	// workflow waits without holding a worker); once a worker completes the task, the step runs
	// again from the start, and CallRemote returns the worker's output. A failed task is a
	// *RemoteError (wrapped in NonRetryable unless the worker said a retry may help), which fails
	// the attempt under the state's retry policy, or which the handler may handle itself. One
	// call per step: the step is the unit that runs again.
	CallRemote(function string, input any) (json.RawMessage, error)
	// RecordSideEffect returns the JSON recorded under key for this workflow, or calls fn and
	// records its result first. Use SideEffect, which types the value.
	RecordSideEffect(key string, fn func() (any, error)) (json.RawMessage, error)
}

// SideEffect returns the value recorded under key for this workflow, or calls fn, records its
// result before returning it, and never calls fn for that key again: a step that runs again (a
// retry, or another executor after a crash) gets the first value.
func SideEffect[T any](ctx StepContext, key string, fn func() (T, error)) (T, error) {
	var zero T
	raw, err := ctx.RecordSideEffect(key, func() (any, error) { return fn() })
	if err != nil {
		return zero, err
	}
	var out T
	if err := json.Unmarshal(raw, &out); err != nil {
		return zero, fmt.Errorf("error decoding side effect %q: %w", key, err)
	}
	return out, nil
}

// SignalRequest is a signal a step sends to another workflow, delivered when the step completes.
type SignalRequest struct {
	ID      int64
	Name    string
	Payload json.RawMessage
	// IdempotencyKey delivers the signal once per key and workflow. A signal whose key another
	// request took is not delivered, and neither are its Cancels: a claim only one step can make.
	IdempotencyKey string
	// Cancels are the workflows to cancel once the signal is delivered (the losers of a race).
	Cancels []CancelRequest
}

// CancelRequest is a workflow a step cancels, with its descendants, when the step completes. One
// that has ended by then is left as it is.
type CancelRequest struct {
	ID     int64
	Reason string
}

// Reader is what a step may read beyond its own workflow.
type Reader interface {
	// Children lists the newest children of workflow parent, newest first, at most limit.
	Children(ctx context.Context, parent int64, limit int) ([]*persistence.Workflow, error)
	// Signals lists the signals sent to a workflow named name, oldest first.
	Signals(ctx context.Context, id int64, name string) ([]*persistence.Signal, error)
	// Definition returns version of definition typ (0: the newest); persistence.ErrNotFound when
	// there is none.
	Definition(ctx context.Context, typ string, version int) (*persistence.Definition, error)
	// DeployedVersion returns the newest deployed version of typ whose document version is label
	// (see Engine.DeployedVersion).
	DeployedVersion(ctx context.Context, typ, label string) (*persistence.Definition, error)
}

// AfterFailure says the attempt failed with problem although the step handled the failure and
// goes where n says (a Serverless Workflow try that retries its tasks or runs its catch): the
// attempt's task instance is FAILED with problem as its error, its action STATE_EXECUTION_FAILED,
// and the workflow's lastError is problem until a step succeeds. problem is RFC 7807 Problem
// Details as JSON, or a message; the state text is the Problem's title and detail unless n has a
// text.
func (n Next) AfterFailure(problem string) Next { return Next(step.Next(n).WithFailure(problem)) }
