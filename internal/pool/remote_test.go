package pool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// remoteEcho is a definition whose first state calls the remote function "echo" with the
// workflow's input and keeps the output in the variable "result".
func remoteEcho(typ, function string, retry *workflow.RetryPolicy) workflow.Definition {
	return workflow.Definition{Type: typ, States: []workflow.State{
		{Name: "call", Kind: workflow.Start, Next: []string{"done"}, Retry: retry, Handler: func(c workflow.StepContext) (workflow.Next, error) {
			var in any
			if err := c.Input(&in); err != nil {
				return workflow.Next{}, err
			}
			out, err := c.CallRemote(function, in)
			if err != nil {
				return workflow.Next{}, err
			}
			if err := c.SetVar("result", json.RawMessage(out)); err != nil {
				return workflow.Next{}, err
			}
			return workflow.MoveTo("done"), nil
		}},
		{Name: "done", Kind: workflow.End},
	}}
}

func ptr[T any](v T) *T { return &v }

// pollOne polls until one task of a function arrives (failing after a while).
func pollOne(t *testing.T, e *engine.Engine, function string, leaseMs int, worker string) workflow.LeasedTask {
	t.Helper()
	for i := 0; i < 30; i++ {
		got, err := e.PollTasks(context.Background(), workflow.PollTasksParams{Functions: []string{function}, WaitMs: ptr(1000), LeaseMs: ptr(leaseMs), Worker: worker})
		require.NoError(t, err)
		if len(got) == 1 {
			return got[0]
		}
	}
	t.Fatalf("no task of %s was offered", function)
	return workflow.LeasedTask{}
}

func TestRemoteTaskRoundTrip(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store, remoteEcho("remote.echo", "echo", nil))
		b.startWorker(t, fastOptions())
		w := b.start(t, "remote.echo", `{"n": 7}`)
		task := pollOne(t, b.engine, "echo", 30000, "w1")
		require.Equal(t, w.ID, task.WorkflowID)
		require.Equal(t, 1, task.Attempt)
		require.JSONEq(t, `{"n": 7}`, string(task.Input))
		waiting := b.waitStatus(t, w.ID, persistence.StatusWaiting)
		running := b.engine.RunningAttempt(context.Background(), waiting)
		require.NotNil(t, running, "a leased task is a RUNNING task instance")
		require.Equal(t, "remote:echo", running.TaskType)
		require.Equal(t, "w1", running.Host)

		_, err := b.engine.CompleteTask(context.Background(), task.Token, json.RawMessage(`{"echo": 7}`), nil)
		require.NoError(t, err)
		_, err = b.engine.CompleteTask(context.Background(), task.Token, json.RawMessage(`{"echo": 8}`), nil)
		require.Equal(t, workflow.CodeConflict, workflow.CodeOf(err), "a second completion is CONFLICT: %v", err)

		done := b.waitStatus(t, w.ID, persistence.StatusFinished)
		require.Equal(t, map[string]any{"echo": float64(7)}, vars(t, done)["result"])
		// One succeeded attempt records the task (a loaded machine may add a LOST or CANCELLED
		// one, when the pool's executor is declared dead while a step runs and recovered).
		var tis []*persistence.TaskInstance
		for _, ti := range b.tasks(t, w.ID) {
			if ti.Status == persistence.TaskSucceeded {
				tis = append(tis, ti)
			}
		}
		require.Len(t, tis, 1)
		require.Equal(t, "remote:echo", tis[0].TaskType)
		require.Equal(t, "w1", tis[0].Host)
		require.JSONEq(t, `{"echo": 7}`, string(tis[0].Output))

		workers, err := b.engine.RemoteWorkers(context.Background())
		require.NoError(t, err)
		require.Len(t, workers, 1)
		require.Equal(t, "w1", workers[0].Name)
		require.Equal(t, "echo", workers[0].Functions)
	})
}

// A worker that takes a task and is gone: the task is offered again once its lease runs out, with
// a new token and attempt + 1; the old token writes nothing; the workflow finishes.
func TestRemoteLeaseExpiresAndTaskIsOfferedAgain(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store, remoteEcho("remote.gone", "gone", nil))
		b.startWorker(t, fastOptions())
		b.sweepLeases(t)
		w := b.start(t, "remote.gone", `{}`)
		first := pollOne(t, b.engine, "gone", 1000, "dies")
		second := pollOne(t, b.engine, "gone", 30000, "lives")
		require.Equal(t, first.ID, second.ID)
		require.Equal(t, first.Attempt+1, second.Attempt)
		require.NotEqual(t, first.Token, second.Token)
		// Offered again by the lease sweep (not asserted by times: a poll's clock reading may
		// predate the sweep it waited for on a loaded machine).
		require.True(t, second.Leased.After(*first.Leased))

		_, err := b.engine.CompleteTask(context.Background(), first.Token, json.RawMessage(`"stale"`), nil)
		require.Equal(t, workflow.CodeConflict, workflow.CodeOf(err))
		_, err = b.engine.HeartbeatTask(context.Background(), first.Token, nil)
		require.Equal(t, workflow.CodeConflict, workflow.CodeOf(err))
		_, err = b.engine.CompleteTask(context.Background(), second.Token, json.RawMessage(`"fresh"`), nil)
		require.NoError(t, err)
		done := b.waitStatus(t, w.ID, persistence.StatusFinished)
		require.Equal(t, "fresh", vars(t, done)["result"])
		require.GreaterOrEqual(t, b.engine.RemoteStats().LeaseExpiries.Load(), int64(1))

		// The attempt whose lease ran out shows where it failed: a LOST task instance of the
		// worker that held it, with its Problem.
		var lost []*persistence.TaskInstance
		for _, ti := range b.tasks(t, w.ID) {
			if ti.Status == persistence.TaskLost && ti.TaskType != "handler" { // not a pool's recovery on a loaded machine
				lost = append(lost, ti)
			}
		}
		require.Len(t, lost, 1)
		require.Equal(t, "remote:gone", lost[0].TaskType)
		require.Equal(t, "call", lost[0].State)
		require.Equal(t, first.Attempt, lost[0].Attempt)
		require.Equal(t, "dies", lost[0].Host)
		var problem workflow.Problem
		require.NoError(t, json.Unmarshal([]byte(*lost[0].Error), &problem))
		require.Equal(t, "Lease Expired", problem.Title)
		require.Contains(t, problem.Detail, `"dies"`)
	})
}

// Heartbeats keep a task longer than its lease: nobody else is offered it meanwhile.
func TestRemoteHeartbeatsKeepALongTask(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store, remoteEcho("remote.long", "long", nil))
		b.startWorker(t, fastOptions())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		b.sweepLeases(t)
		w := b.start(t, "remote.long", `{}`)
		// A 2 s lease, heartbeats every 300 ms for 5 s: a loaded machine may delay a heartbeat,
		// not by seconds.
		task := pollOne(t, b.engine, "long", 2000, "slow")
		stolen := make(chan int, 1)
		go func() {
			got, err := b.engine.PollTasks(ctx, workflow.PollTasksParams{Functions: []string{"long"}, WaitMs: ptr(4500)})
			if err == nil {
				stolen <- len(got)
			}
		}()
		var last time.Time
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
			d, err := b.engine.HeartbeatTask(context.Background(), task.Token, nil)
			require.NoError(t, err)
			require.True(t, d.After(last))
			last = d
		}
		select {
		case n := <-stolen:
			require.Zero(t, n, "a task kept alive by heartbeats was offered to another worker")
		case <-time.After(10 * time.Second):
			t.Fatal("the other poll never returned")
		}
		_, err := b.engine.CompleteTask(context.Background(), task.Token, json.RawMessage(`1`), nil)
		require.NoError(t, err)
		b.waitStatus(t, w.ID, persistence.StatusFinished)
		require.Zero(t, b.engine.RemoteStats().LeaseExpiries.Load())
	})
}

// Concurrent pollers never get the same task.
func TestRemoteConcurrentPollersNeverShareATask(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store, remoteEcho("remote.many", "many", nil))
		b.startWorker(t, fastOptions())
		const n = 60
		ids := make([]int64, n)
		for i := range ids {
			ids[i] = b.start(t, "remote.many", fmt.Sprintf(`{"i": %d}`, i)).ID
		}
		var mu sync.Mutex
		seen := map[int64]int{}
		var wg sync.WaitGroup
		for p := 0; p < 6; p++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					mu.Lock()
					total := 0
					for _, c := range seen {
						total += c
					}
					mu.Unlock()
					if total >= n {
						return
					}
					got, err := b.engine.PollTasks(context.Background(), workflow.PollTasksParams{Functions: []string{"many"}, Max: ptr(4), WaitMs: ptr(200)})
					if err != nil {
						t.Error(err)
						return
					}
					for _, task := range got {
						mu.Lock()
						seen[task.ID]++
						mu.Unlock()
						if _, err := b.engine.CompleteTask(context.Background(), task.Token, task.Input, nil); err != nil {
							t.Error(err)
						}
					}
				}
			}()
		}
		wg.Wait()
		require.Len(t, seen, n)
		for id, c := range seen {
			require.Equal(t, 1, c, "task %d was leased %d times", id, c)
		}
		for _, id := range ids {
			b.waitStatus(t, id, persistence.StatusFinished)
		}
	})
}

// A retryable failure runs the step again under the state's policy, as a new task with the next
// attempt; a failure that is not retryable fails the workflow at once.
func TestRemoteFailureFollowsTheRetryPolicy(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		policy := &workflow.RetryPolicy{MaxAttempts: 3, MinBackoff: 10 * time.Millisecond, MaxBackoff: 10 * time.Millisecond}
		b := setup(t, store, remoteEcho("remote.flaky", "flaky", policy))
		b.startWorker(t, fastOptions())
		w := b.start(t, "remote.flaky", `{}`)
		first := pollOne(t, b.engine, "flaky", 30000, "w")
		_, err := b.engine.FailTask(context.Background(), first.Token, workflow.TaskFailure{Title: "Busy", Status: ptr(503)}, true, nil)
		require.NoError(t, err)
		second := pollOne(t, b.engine, "flaky", 30000, "w")
		require.NotEqual(t, first.ID, second.ID)
		require.Equal(t, 2, second.Attempt)
		_, err = b.engine.CompleteTask(context.Background(), second.Token, json.RawMessage(`"ok"`), nil)
		require.NoError(t, err)
		b.waitStatus(t, w.ID, persistence.StatusFinished)
		var tis []*persistence.TaskInstance
		for _, ti := range b.tasks(t, w.ID) {
			if ti.Status == persistence.TaskSucceeded || ti.Status == persistence.TaskFailed {
				tis = append(tis, ti) // not the LOST or CANCELLED ones a recovery may add
			}
		}
		require.Len(t, tis, 2)
		require.Equal(t, persistence.TaskFailed, tis[0].Status)
		require.Contains(t, deref(tis[0].Error), "Busy")
		require.Equal(t, 1, tis[0].Attempt)
		require.Equal(t, persistence.TaskSucceeded, tis[1].Status)
		require.Equal(t, 2, tis[1].Attempt)

		w2 := b.start(t, "remote.flaky", `{}`)
		task := pollOne(t, b.engine, "flaky", 30000, "w")
		_, err = b.engine.FailTask(context.Background(), task.Token, workflow.TaskFailure{Title: "Bad Request", Status: ptr(400)}, false, nil)
		require.NoError(t, err)
		failed := b.waitFor(t, w2.ID, "MANUAL (no ERROR state)", func(w *persistence.Workflow) bool { return w.Status == persistence.StatusManual })
		require.Contains(t, deref(failed.LastError), "Bad Request")
	})
}

// The tasks of a cancelled workflow are cancelled too: no worker is offered them, and the worker
// holding one gets CONFLICT when it reports.
func TestRemoteTasksOfCancelledWorkflowsAreCancelled(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store, remoteEcho("remote.cancel", "cancelme", nil))
		b.startWorker(t, fastOptions())
		b.sweepLeases(t)
		held := b.start(t, "remote.cancel", `{}`)
		task := pollOne(t, b.engine, "cancelme", 30000, "w")
		pending := b.start(t, "remote.cancel", `{}`)
		b.waitStatus(t, pending.ID, persistence.StatusWaiting)
		for _, id := range []int64{held.ID, pending.ID} {
			_, err := b.engine.Cancel(context.Background(), workflow.ChangeParams{ID: id, Actor: "test"})
			require.NoError(t, err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			cur, err := store.RemoteTaskGet(context.Background(), task.ID)
			require.NoError(t, err)
			if cur.Status == persistence.RemoteTaskCancelled {
				break
			}
			require.True(t, time.Now().Before(deadline), "the task of a cancelled workflow is still %s", cur.Status)
			time.Sleep(50 * time.Millisecond)
		}
		got, err := b.engine.PollTasks(context.Background(), workflow.PollTasksParams{Functions: []string{"cancelme"}, WaitMs: ptr(300)})
		require.NoError(t, err)
		require.Empty(t, got)
		_, err = b.engine.CompleteTask(context.Background(), task.Token, json.RawMessage(`1`), nil)
		require.Equal(t, workflow.CodeConflict, workflow.CodeOf(err))
	})
}

// A long poll ends when its caller goes away (the request's context), and at once when the node
// stops polls (shutting down).
func TestRemotePollEndsWithItsCaller(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, persistence.KindSQLite)
	b := setup(t, store)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := b.engine.PollTasks(ctx, workflow.PollTasksParams{Functions: []string{"nobody"}, WaitMs: ptr(60000)})
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("the poll went on after its caller left")
	}
	go func() {
		_, err := b.engine.PollTasks(context.Background(), workflow.PollTasksParams{Functions: []string{"nobody"}, WaitMs: ptr(60000)})
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	b.engine.StopPolls()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the poll went on after the node stopped polls")
	}
}
