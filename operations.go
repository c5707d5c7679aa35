package cairn

import (
	"context"
	"encoding/json"
	"iter"
	"time"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// The operations: what a program does with workflows through its node, the same that the GraphQL
// API's mutations do. Each checks its input (a *workflow.Error with a Code when it refuses) and
// commits in one transaction; the parameter and result types are package workflow's.

// Register validates a definition, stores it (a new version when its content changed since the
// last one; workflows already running keep the version they started with) and makes its handlers
// available to this node's pools. It returns the stored version.
func (n *Node) Register(ctx context.Context, def workflow.Definition) (*persistence.Definition, error) {
	return n.engine.Register(ctx, def)
}

// Definition returns the definition registered for a type on this node.
func (n *Node) Definition(typ string) (*workflow.Definition, bool) { return n.engine.Definition(typ) }

// Deploy compiles a document (Serverless Workflow YAML or JSON, with Options.Documents) and stores
// it as a new version of its type, or returns the stored one when nothing changed. A new version is
// in the audit log as the act of "cli".
func (n *Node) Deploy(ctx context.Context, source string) (workflow.DeployResult, error) {
	return n.engine.Deploy(ctx, source, "cli")
}

// DeployedVersion returns the newest deployed version of typ whose document version is label.
func (n *Node) DeployedVersion(ctx context.Context, typ, label string) (*persistence.Definition, error) {
	return n.engine.DeployedVersion(ctx, typ, label)
}

// SetReleaseState puts a definition ONLINE or OFFLINE (an OFFLINE type starts no new workflow;
// those running go on). The change is in the audit log as the act of "cli".
func (n *Node) SetReleaseState(ctx context.Context, typ string, state persistence.ReleaseState) (*persistence.Definition, error) {
	return n.engine.SetReleaseState(ctx, typ, state, "cli")
}

// Start starts a workflow, or returns the existing one with the same external ID or idempotency
// key (Created false).
func (n *Node) Start(ctx context.Context, p workflow.StartParams) (workflow.StartResult, error) {
	return n.engine.Start(ctx, p)
}

// StartMany starts many workflows in one transaction; the results follow ps's order.
func (n *Node) StartMany(ctx context.Context, ps []workflow.StartParams) ([]workflow.StartResult, error) {
	return n.engine.StartMany(ctx, ps)
}

// Retry runs a MANUAL or FAILED workflow again from a state (the one that failed by default), with
// its retry count reset.
func (n *Node) Retry(ctx context.Context, p workflow.RetryParams) (*persistence.Workflow, error) {
	return n.engine.Retry(ctx, p)
}

// Pause stops a workflow from being claimed until it is resumed; a step running then is cancelled
// and its state runs again after Resume.
func (n *Node) Pause(ctx context.Context, p workflow.ChangeParams) (*persistence.Workflow, error) {
	return n.engine.Pause(ctx, p)
}

// Resume lets a paused workflow run on.
func (n *Node) Resume(ctx context.Context, p workflow.ChangeParams) (*persistence.Workflow, error) {
	return n.engine.Resume(ctx, p)
}

// Cancel ends a workflow that has not ended, and every descendant that has not ended either; their
// running steps are cancelled.
func (n *Node) Cancel(ctx context.Context, p workflow.ChangeParams) (*persistence.Workflow, error) {
	return n.engine.Cancel(ctx, p)
}

// Update changes a workflow's state, state text, schedule or variables; a workflow whose step is
// running, or that has ended, is a CONFLICT.
func (n *Node) Update(ctx context.Context, p workflow.UpdateParams) (*persistence.Workflow, error) {
	return n.engine.Update(ctx, p)
}

// WakeUp makes a scheduled or waiting workflow due now.
func (n *Node) WakeUp(ctx context.Context, p workflow.ChangeParams) (*persistence.Workflow, error) {
	return n.engine.WakeUp(ctx, p)
}

// Signal delivers a message to a workflow: one waiting for it wakes at once, another keeps it until
// a WAIT state asks for it. The same idempotency key delivers once.
func (n *Node) Signal(ctx context.Context, p workflow.SignalParams) (*persistence.Workflow, error) {
	return n.engine.Signal(ctx, p)
}

// SubmitForm submits the form of a workflow's user task, checked against its state's schema.
func (n *Node) SubmitForm(ctx context.Context, p workflow.SubmitFormParams) (*persistence.Workflow, error) {
	return n.engine.SubmitForm(ctx, p)
}

// PublishEvent delivers an event (CloudEvents JSON) to every workflow waiting for a signal named by
// its type, once per event (source and id), and returns them.
func (n *Node) PublishEvent(ctx context.Context, event json.RawMessage) ([]*persistence.Workflow, error) {
	return n.engine.PublishEvent(ctx, event)
}

// Wait returns the workflow once it has ended (FINISHED, FAILED or CANCELLED), or ctx's error.
// It wakes on the node's change hints and looks again once a second otherwise.
func (n *Node) Wait(ctx context.Context, id int64) (*persistence.Workflow, error) {
	return n.engine.Wait(ctx, id)
}

// Follow is an iterator over a workflow's change events, in commit order, that ends with the
// event that ends it (or with ctx's error).
func (n *Node) Follow(ctx context.Context, id int64) iter.Seq2[*persistence.ChangeEvent, error] {
	return n.engine.Follow(ctx, id)
}

// CreateSchedule stores a schedule that starts workflows of a type on a cron expression.
func (n *Node) CreateSchedule(ctx context.Context, p workflow.ScheduleParams) (*persistence.Schedule, error) {
	return n.engine.CreateSchedule(ctx, p)
}

// SetSchedulePaused pauses or resumes a schedule.
func (n *Node) SetSchedulePaused(ctx context.Context, id int64, paused bool) (*persistence.Schedule, error) {
	return n.engine.SetSchedulePaused(ctx, id, paused)
}

// BackfillSchedule starts the runs a schedule would have started for its fire times in [from, to]
// (at most 1000); a time that fired already starts nothing again.
func (n *Node) BackfillSchedule(ctx context.Context, id int64, from, to time.Time) ([]workflow.StartResult, error) {
	return n.engine.BackfillSchedule(ctx, id, from, to)
}

// PollTasks leases pending remote tasks of the functions a remote worker serves, waiting a while
// for one to arrive; it returns none when none came in time.
func (n *Node) PollTasks(ctx context.Context, p workflow.PollTasksParams) ([]workflow.LeasedTask, error) {
	return n.engine.PollTasks(ctx, p)
}

// HeartbeatTask extends the lease a task token holds, and returns the new deadline. allowed, when
// not nil, are the functions the caller may serve.
func (n *Node) HeartbeatTask(ctx context.Context, token string, allowed []string) (time.Time, error) {
	return n.engine.HeartbeatTask(ctx, token, allowed)
}

// CompleteTask ends a leased task with its output and wakes its workflow. allowed, when not nil,
// are the functions the caller may serve.
func (n *Node) CompleteTask(ctx context.Context, token string, output json.RawMessage, allowed []string) (*persistence.RemoteTask, error) {
	return n.engine.CompleteTask(ctx, token, output, allowed)
}

// CompleteTasks ends many leased tasks with their outputs in one transaction.
func (n *Node) CompleteTasks(ctx context.Context, results []workflow.TaskResult, allowed []string) ([]workflow.EndedTask, error) {
	return n.engine.CompleteTasks(ctx, results, allowed)
}

// FailTask ends a leased task with an error; a retryable one runs again under the state's retry
// policy.
func (n *Node) FailTask(ctx context.Context, token string, f workflow.TaskFailure, retryable bool, allowed []string) (*persistence.RemoteTask, error) {
	return n.engine.FailTask(ctx, token, f, retryable, allowed)
}

// RemoteWorkers lists the remote workers seen polling.
func (n *Node) RemoteWorkers(ctx context.Context) ([]*persistence.RemoteWorker, error) {
	return n.engine.RemoteWorkers(ctx)
}

// Limits returns the limits the node applies (Options.Limits with the defaults filled in).
func (n *Node) Limits() workflow.Limits { return n.engine.Limits() }

// StartBulk starts a bulk operation: an action on every workflow a filter matches now, carried out
// in batches by the bulk runner of any node (or only counted, with DryRun).
func (n *Node) StartBulk(ctx context.Context, p workflow.BulkParams) (*persistence.BulkOperation, error) {
	return n.engine.StartBulk(ctx, p)
}

// CancelBulk stops a bulk operation: the workflows it has not reached are left alone.
func (n *Node) CancelBulk(ctx context.Context, id int64, actor string) (*persistence.BulkOperation, error) {
	return n.engine.CancelBulk(ctx, id, actor)
}

// BulkOperation returns a bulk operation and its progress.
func (n *Node) BulkOperation(ctx context.Context, id int64) (*persistence.BulkOperation, error) {
	return n.engine.BulkOperation(ctx, id)
}

// Rerun starts a new workflow from an ended one, with its input or a new one, linked to it.
func (n *Node) Rerun(ctx context.Context, p workflow.RerunParams) (*persistence.Workflow, error) {
	return n.engine.Rerun(ctx, p)
}

// Delete removes an ended workflow with its history and its descendants.
func (n *Node) Delete(ctx context.Context, p workflow.DeleteParams) error {
	return n.engine.Delete(ctx, p)
}

// Audit appends an operator act to the audit log.
func (n *Node) Audit(ctx context.Context, actor, action, subject, reason string, details any) error {
	return n.engine.Audit(ctx, actor, action, subject, reason, details)
}
