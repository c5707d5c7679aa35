package engine

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// remoteState is a node's part of the remote task protocol.
type remoteState struct {
	once sync.Once
	stop chan struct{}

	mu   sync.Mutex
	seen map[string]time.Time // when each worker's poll was last recorded

	stats RemoteStats
	ends  endBatch
}

func (r *remoteState) init() {
	r.once.Do(func() {
		r.stop = make(chan struct{})
		r.seen = map[string]time.Time{}
		r.stats.PollSeconds = newHistogram()
		r.stats.WaitSeconds = newHistogram()
	})
}

// StopPolls ends every poll waiting on this node at once, and makes later ones return without
// waiting: the node is shutting down.
func (e *Engine) StopPolls() {
	e.remote.init()
	select {
	case <-e.remote.stop:
	default:
		close(e.remote.stop)
	}
}

// RemoteStats returns the node's counters of the remote task protocol.
func (e *Engine) RemoteStats() *RemoteStats {
	e.remote.init()
	return &e.remote.stats
}

func forbidden(field, format string, args ...any) *workflow.Error {
	return workflow.NewError(workflow.CodeForbidden, field, format, args...)
}

// intIn reads an optional int field in [min, max], def when nil.
func intIn(field string, v *int, def, lo, hi int) (int, error) {
	if v == nil {
		return def, nil
	}
	if *v < lo || *v > hi {
		return 0, invalid(field, "must be from %d to %d, not %d", lo, hi, *v)
	}
	return *v, nil
}

// PollTasks leases up to max pending tasks of the functions for leaseMs, waiting up to waitMs for
// one to arrive (on this node or, through PostgreSQL NOTIFY, on any other). It returns no task
// when none came in time, and ends early with the request's context or the node's shutdown.
func (e *Engine) PollTasks(ctx context.Context, p workflow.PollTasksParams) ([]workflow.LeasedTask, error) {
	e.remote.init()
	if len(p.Functions) == 0 {
		return nil, invalid("functions", "name at least one function")
	}
	if len(p.Functions) > workflow.MaxPollFunctions {
		return nil, invalid("functions", "name at most %d functions, not %d", workflow.MaxPollFunctions, len(p.Functions))
	}
	functions := make([]string, 0, len(p.Functions))
	for i, f := range p.Functions {
		field := fmt.Sprintf("functions[%d]", i)
		if f == "" {
			return nil, invalid(field, "a function needs a name")
		}
		if err := workflow.CheckString(field, f, workflow.MaxKeyLength); err != nil {
			return nil, err
		}
		if p.Allowed != nil && !slices.Contains(p.Allowed, f) {
			return nil, forbidden(field, "this token may not serve function %q", f)
		}
		if !slices.Contains(functions, f) {
			functions = append(functions, f)
		}
	}
	limit, err := intIn("max", p.Max, 1, 1, workflow.MaxPollTasks)
	if err != nil {
		return nil, err
	}
	waitMs, err := intIn("waitMs", p.WaitMs, 0, 0, int(workflow.MaxPollWait/time.Millisecond))
	if err != nil {
		return nil, err
	}
	leaseMs, err := intIn("leaseMs", p.LeaseMs, int(workflow.DefaultTaskLease/time.Millisecond), int(workflow.MinTaskLease/time.Millisecond), int(workflow.MaxTaskLease/time.Millisecond))
	if err != nil {
		return nil, err
	}
	worker := p.Worker
	if worker == "" {
		worker = "unnamed"
	}
	if err := workflow.CheckString("worker", worker, workflow.MaxKeyLength); err != nil {
		return nil, err
	}
	e.remoteWorkerSeen(ctx, worker, functions)

	var hints <-chan string
	if waitMs > 0 {
		// Listen before the first look, so that a task created in between is not missed.
		ch, unsubscribe := e.notifier.Subscribe(persistence.TopicTasks)
		defer unsubscribe()
		hints = ch
	}
	deadline := time.Now().Add(time.Duration(waitMs) * time.Millisecond)
	recorded := time.Now()
	for {
		if time.Since(recorded) >= workflow.RemoteWorkerRefresh {
			// A waiting worker is alive: recorded again, so that it is never listed as gone.
			e.remoteWorkerSeen(ctx, worker, functions)
			recorded = time.Now()
		}
		tasks, err := e.leaseTasks(ctx, functions, limit, time.Duration(leaseMs)*time.Millisecond, worker)
		if err != nil || len(tasks) > 0 || waitMs == 0 {
			return tasks, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil
		}
		// A hint can be lost (a reconnecting listener); look again at least every second.
		timer := time.NewTimer(min(left, time.Second))
		woken := false
		for !woken {
			select {
			case <-ctx.Done():
				timer.Stop()
				return nil, ctx.Err()
			case <-e.remote.stop:
				timer.Stop()
				return nil, nil
			case <-timer.C:
				woken = true
			case fn := <-hints:
				woken = fn == "" || slices.Contains(functions, fn)
			}
		}
		timer.Stop()
	}
}

// leaseTasks runs one lease statement and makes the tokens.
func (e *Engine) leaseTasks(ctx context.Context, functions []string, limit int, lease time.Duration, worker string) ([]workflow.LeasedTask, error) {
	secret, err := newLeaseSecret()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	rows, err := e.store.RemoteTaskLease(ctx, persistence.RemoteTaskLeaseParams{Functions: functions, Limit: limit, Token: secret,
		Lease: lease, Worker: worker, Now: persistence.Now()})
	if err != nil {
		return nil, err
	}
	e.remote.stats.PollSeconds.observe(time.Since(start).Seconds())
	out := make([]workflow.LeasedTask, len(rows))
	for i, t := range rows {
		if t.Leased != nil {
			e.remote.stats.WaitSeconds.observe(t.Leased.Sub(t.Created).Seconds())
		}
		out[i] = workflow.LeasedTask{RemoteTask: t, Token: strconv.FormatInt(t.ID, 10) + "." + secret}
	}
	return out, nil
}

// newLeaseSecret makes the random part of the tokens of one poll's leases.
func newLeaseSecret() (string, error) {
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("error making a lease token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// remoteWorkerSeen records a worker's poll, at most about once a second per worker and node: the
// list of workers needs no more, and a write per poll would cost the hot path.
func (e *Engine) remoteWorkerSeen(ctx context.Context, worker string, functions []string) {
	now := time.Now()
	e.remote.mu.Lock()
	last, ok := e.remote.seen[worker]
	if ok && now.Sub(last) < time.Second {
		e.remote.mu.Unlock()
		return
	}
	e.remote.seen[worker] = now
	e.remote.mu.Unlock()
	if err := e.store.RemoteWorkerSeen(ctx, worker, functions, persistence.Now()); err != nil && ctx.Err() == nil {
		e.log.Warn("error recording a remote worker", "worker", worker, "error", err)
	}
}

// parseTaskToken splits a task token into the task's ID and its lease secret.
func parseTaskToken(token string) (int64, string, error) {
	idText, secret, ok := strings.Cut(token, ".")
	id, err := strconv.ParseInt(idText, 10, 64)
	if !ok || err != nil || id <= 0 || secret == "" || len(token) > 128 {
		return 0, "", invalid("token", "not a task token (pass the token pollTasks returned)")
	}
	return id, secret, nil
}

// taskFor checks a token's form and that the caller may serve its task's function.
func (e *Engine) taskFor(ctx context.Context, token string, allowed []string) (int64, string, error) {
	id, secret, err := parseTaskToken(token)
	if err != nil {
		return 0, "", err
	}
	if allowed != nil {
		if err := e.checkTaskFunction(ctx, id, allowed); err != nil {
			return 0, "", err
		}
	}
	return id, secret, nil
}

// checkTaskFunction reads task id and refuses it when its function is not among allowed.
func (e *Engine) checkTaskFunction(ctx context.Context, id int64, allowed []string) error {
	t, err := e.store.RemoteTaskGet(ctx, id)
	if errors.Is(err, persistence.ErrNotFound) {
		return conflictOn("token", "the token holds no task")
	}
	if err != nil {
		return err
	}
	if !slices.Contains(allowed, t.Function) {
		return forbidden("token", "this token may not serve function %q", t.Function)
	}
	return nil
}

// HeartbeatTask extends the lease a token holds by the poll's leaseMs and returns the new
// deadline. A lease that ran out, or a task that ended, is CONFLICT.
func (e *Engine) HeartbeatTask(ctx context.Context, token string, allowed []string) (time.Time, error) {
	id, secret, err := e.taskFor(ctx, token, allowed)
	if err != nil {
		return time.Time{}, err
	}
	deadline, err := e.store.RemoteTaskHeartbeat(ctx, id, secret, persistence.Now())
	if errors.Is(err, persistence.ErrConflict) {
		return time.Time{}, conflictOn("token", "the lease is lost: it ran out (the task was offered again) or the task ended")
	}
	return deadline, err
}

// CompleteTask ends a leased task with its output and wakes its workflow, which records the
// output in its step. Output that is not a storable JSON value or is too large is INVALID_INPUT
// and the task stays leased; a token that no longer holds the task is CONFLICT and writes nothing.
func (e *Engine) CompleteTask(ctx context.Context, token string, output json.RawMessage, allowed []string) (*persistence.RemoteTask, error) {
	output, err := checkTaskOutput("output", output)
	if err != nil {
		return nil, err
	}
	if err := checkValue(e.limits, "output", output); err != nil {
		return nil, err
	}
	id, secret, err := parseTaskToken(token)
	if err != nil {
		return nil, err
	}
	return e.endTask(ctx, persistence.RemoteTaskEndParams{ID: id, Token: secret, Status: persistence.RemoteTaskSucceeded, Output: output,
		Functions: allowed})
}

// checkTaskOutput checks a task's output (none is null): a storable JSON value within
// MaxTaskOutputBytes, or INVALID_INPUT naming field.
func checkTaskOutput(field string, output json.RawMessage) (json.RawMessage, error) {
	if len(output) == 0 {
		output = json.RawMessage("null")
	}
	if len(output) > workflow.MaxTaskOutputBytes {
		return nil, invalid(field, "the output is %d bytes, over the limit of %d", len(output), workflow.MaxTaskOutputBytes)
	}
	if !json.Valid(output) {
		return nil, invalid(field, "not a JSON value")
	}
	if err := workflow.CheckJSON(field, output); err != nil {
		return nil, err
	}
	return output, nil
}

// FailTask ends a leased task with an error and wakes its workflow: a retryable failure runs the
// step again under the state's retry policy (a new task, after the policy's backoff), another
// fails the step at once. A token that no longer holds the task is CONFLICT and writes nothing.
func (e *Engine) FailTask(ctx context.Context, token string, f workflow.TaskFailure, retryable bool, allowed []string) (*persistence.RemoteTask, error) {
	for field, v := range map[string]string{"error.type": f.Type, "error.title": f.Title} {
		if err := workflow.CheckString(field, v, workflow.MaxKeyLength*4); err != nil {
			return nil, err
		}
	}
	if err := workflow.CheckString("error.detail", f.Detail, workflow.MaxTextLength); err != nil {
		return nil, err
	}
	re := workflow.RemoteError{Type: f.Type, Title: f.Title, Detail: f.Detail}
	if f.Status != nil {
		if *f.Status < 100 || *f.Status > 599 {
			return nil, invalid("error.status", "must be an HTTP status from 100 to 599, not %d", *f.Status)
		}
		re.Status = *f.Status
	}
	problem, err := json.Marshal(re)
	if err != nil {
		return nil, fmt.Errorf("error encoding a task's failure: %w", err)
	}
	id, secret, err := parseTaskToken(token)
	if err != nil {
		return nil, err
	}
	return e.endTask(ctx, persistence.RemoteTaskEndParams{ID: id, Token: secret, Status: persistence.RemoteTaskFailed,
		Error: problem, Retryable: retryable, Functions: allowed})
}

// endTask writes a worker's result (fenced by its token, its lease and, with p.Functions, the
// functions the caller may serve) and wakes the task's workflow. Results that arrive together
// share one transaction (see endBatch). Only a refused result reads its task, to tell a function
// the caller may not serve (FORBIDDEN) from a lost lease (CONFLICT).
func (e *Engine) endTask(ctx context.Context, p persistence.RemoteTaskEndParams) (*persistence.RemoteTask, error) {
	e.remote.init()
	t, err := e.remote.ends.do(ctx, e, p)
	if errors.Is(err, persistence.ErrConflict) {
		if p.Functions != nil {
			if err := e.checkTaskFunction(ctx, p.ID, p.Functions); err != nil {
				return nil, err
			}
		}
		return nil, conflictOn("token", "the lease is lost: it ran out (the task was offered again) or the task already ended")
	}
	return t, err
}

// wakeForTasks wakes the WAITING workflows of ended tasks, claiming some of them with claims (see
// persistence.Store.WorkflowWakeAndClaim), and records the change events.
func (e *Engine) wakeForTasks(ctx context.Context, tx *persistence.Store, tasks []*persistence.RemoteTask, now time.Time,
	claims []persistence.WorkflowClaimParams) ([]int64, []*persistence.Workflow, error) {
	if len(tasks) == 0 {
		return nil, nil, nil
	}
	ids := make([]int64, len(tasks))
	for i, t := range tasks {
		ids[i] = t.WorkflowID
	}
	woken, claimed, err := tx.WorkflowWakeAndClaim(ctx, persistence.WorkflowWakeParams{IDs: ids, Now: now}, claims)
	if err != nil || len(woken) == 0 {
		return woken, nil, err
	}
	events := make([]*persistence.ChangeEvent, len(woken))
	for i, id := range woken {
		events[i] = &persistence.ChangeEvent{WorkflowID: id, Type: workflow.EventWoken, Status: persistence.StatusInProgress, At: now}
	}
	return woken, claimed, tx.ChangeEventInsertMany(ctx, events)
}

// LeaseSweep is how often each node looks for leases that ran out (ExpireTaskLeases).
const LeaseSweep = 250 * time.Millisecond

// ExpireTaskLeases ends the leases that ran out: their tasks are offered again (attempt + 1 on
// the next lease), or, when the state's retry policy has no attempt left, fail as timed out and
// wake their workflows. It returns how many leases it ended.
func (e *Engine) ExpireTaskLeases(ctx context.Context) (int, error) {
	e.remote.init()
	problem, _ := json.Marshal(workflow.RemoteError{Type: workflow.RemoteLeaseExpiredType, Status: 408, Title: "Lease Expired",
		Detail: "no worker completed the task before its lease ran out, on every attempt"})
	var tasks []*persistence.RemoteTask
	groups := map[string]bool{}
	var woken []int64
	err := e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		now := persistence.Now()
		var err error
		if tasks, err = tx.RemoteTaskExpireLeases(ctx, now, problem, 1000); err != nil {
			return err
		}
		// Each lease that ran out was an attempt of its step: it shows where it failed, as LOST.
		lost := make([]*persistence.TaskInstance, len(tasks))
		for i, t := range tasks {
			lost[i] = leaseLost(t, now)
		}
		if err := tx.TaskInstanceInsertMany(ctx, lost); err != nil {
			return err
		}
		var failed []*persistence.RemoteTask
		for _, t := range tasks {
			if t.Status == persistence.RemoteTaskFailed {
				failed = append(failed, t)
				groups[t.ExecutorGroup] = true
			}
		}
		woken, _, err = e.wakeForTasks(ctx, tx, failed, now, nil)
		return err
	})
	if err != nil {
		return 0, err
	}
	e.remote.stats.LeaseExpiries.Add(int64(len(tasks)))
	sent := map[string]bool{}
	for _, t := range tasks {
		if t.Status == persistence.RemoteTaskPending && !sent[t.Function] {
			sent[t.Function] = true
			e.notifier.Notify(persistence.TopicTasks, t.Function)
		}
	}
	if len(woken) > 0 {
		e.afterCommit(groups, true)
	}
	return len(tasks), nil
}

// leaseLost is the task instance of a remote task's attempt whose lease ran out.
func leaseLost(t *persistence.RemoteTask, now time.Time) *persistence.TaskInstance {
	ti := &persistence.TaskInstance{WorkflowID: t.WorkflowID, State: t.State, TaskType: "remote:" + t.Function, Attempt: t.Attempt,
		Status: persistence.TaskLost, Started: now, Finished: &now}
	worker := "its worker"
	if t.Worker != nil {
		ti.Host, worker = *t.Worker, "worker "+strconv.Quote(*t.Worker)
	}
	if t.Leased != nil {
		ti.Started = *t.Leased
	}
	msg := (&workflow.Problem{Type: workflow.RemoteLeaseExpiredType, Status: 408, Title: "Lease Expired",
		Detail: worker + " neither completed the task nor heartbeated before its lease ran out"}).Error()
	ti.Error = &msg
	return ti
}

// RemoteWorkers lists the workers that polled, with the leases each holds.
func (e *Engine) RemoteWorkers(ctx context.Context) ([]*persistence.RemoteWorker, error) {
	return e.store.RemoteWorkerList(ctx, persistence.Now())
}
