// Package engineapi is the side of an engine.Engine that the worker pool drives and embedders never
// call: running a claimed workflow's step, writing the outcomes, recovering dead executors' work,
// firing schedules, and the hints and claim parameters the pool needs. Package workflow implements
// it with unexported methods and registers the accessor; Of returns it for an engine.
//
// Keeping this here, under internal/, lets package workflow read as an SDK (definitions, step
// handlers, operations) while the machinery stays in workflow, next to the rules it applies.
package engineapi

import (
	"context"
	"time"

	"github.com/cairnflow/cairn/persistence"
)

// Outcome is the result of running one claimed workflow's step: everything Complete writes for it.
// Only the engine that made it can write it.
type Outcome interface {
	// WorkflowID is the ID of the workflow the outcome belongs to.
	WorkflowID() int64
	// ClaimedVersion is the workflow's version when its executor claimed it for this attempt: with
	// the workflow ID, it names the attempt.
	ClaimedVersion() int
	// Status is the status the workflow will have once the outcome is written.
	Status() persistence.Status
	// TaskStatus is the status of the attempt ("" when nothing ran).
	TaskStatus() persistence.TaskStatus
}

// ExecuteParams is the input of Execute.
type ExecuteParams struct {
	Workflow   *persistence.Workflow
	ExecutorID int64
	Host       string
}

// RecoverParams is the input of Recover.
type RecoverParams struct {
	// ExecutorID is the live executor doing the recovery (recorded on the RECOVERY actions).
	ExecutorID int64
	// Limit caps how many workflows one call takes over.
	Limit int
	// Held, when set, recovers these workflows of ExecutorID itself instead: ones the database says
	// it holds but it is not running (a completion lost in a database crash).
	Held []int64
	// Stopping says ExecutorID is stopping: the steps it still holds (a drain that ran out) are
	// released without spending an attempt, unlike those of executors that died.
	Stopping bool
}

// Engine is what the worker pool calls on an engine.Engine.
type Engine interface {
	// Execute runs the current state of a workflow claimed by an executor and returns the outcome
	// to pass to Complete. It never panics and never blocks past the state's timeout (plus a short
	// grace): a handler that panics is a failed attempt, one that does not return in time a
	// timed-out attempt.
	Execute(ctx context.Context, p ExecuteParams) Outcome
	// Complete writes a batch of outcomes in one transaction: each workflow row (only where the
	// executor still holds it at the claimed version), then its task instance, action, variable
	// changes, activity logs, consumed signal, children and change events. It returns the
	// outcomes that were written; the others lost their claim and left no trace.
	Complete(ctx context.Context, outcomes []Outcome) ([]Outcome, error)
	// CompleteAndContinue is Complete, except that a workflow whose next step is due now, and that
	// keep accepts, stays claimed by its executor: it is returned (as it now is, EXECUTING at its
	// new version) for the executor to run the next step at once, without releasing and claiming
	// it again.
	CompleteAndContinue(ctx context.Context, outcomes []Outcome, keep func(Outcome) bool) (written []Outcome, continued []*persistence.Workflow, err error)
	// FailOutcome replaces an outcome that could not be written with a plain failed attempt (no
	// children, variables or logs), so a step whose results the database refuses still moves on.
	FailOutcome(o Outcome, cause error) Outcome
	// Recover declares dead the executors whose heartbeat expired and takes over the workflows
	// they held (or, with Held, releases workflows of the caller it does not run). It returns how
	// many workflows were recovered.
	Recover(ctx context.Context, p RecoverParams) (int, error)
	// CancelExecutorSteps cancels the steps running on this node for an executor (declared dead),
	// and returns how many.
	CancelExecutorSteps(executorID int64) int
	// FireSchedules starts the runs of every schedule due at now, and returns how many it started.
	FireSchedules(ctx context.Context, now time.Time) (int, error)
	// Notifier is the engine's notifier: wake-up, change-event and cancel hints.
	Notifier() *persistence.Notifier
	// Types returns the types a worker pool for an executor group may claim on this node, sorted.
	Types(group string) []string
	// StepTimeouts lists the states of an executor group's definitions whose steps may run for
	// another time than the default step timeout: a claim gives them their real deadline.
	StepTimeouts(group string) []persistence.StepTimeout
}

var of func(engine any) Engine

// Register installs the accessor Of uses. Package workflow calls it from its init.
func Register(accessor func(engine any) Engine) { of = accessor }

// Of returns the machinery of a *engine.Engine. It panics when engine is something else.
func Of(engine any) Engine {
	if of == nil {
		panic("engineapi: no engine registered (package workflow is not linked in)")
	}
	return of(engine)
}
