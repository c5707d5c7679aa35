package pool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/pool"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

var quickRetry = &workflow.RetryPolicy{MaxAttempts: 2, MinBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}

func alwaysFails(ctx workflow.StepContext) (workflow.Next, error) {
	return workflow.Next{}, errors.New("boom")
}

func TestRetriesExhaustedGoToErrorStateOrManual(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		withError := workflow.Definition{Type: "t.witherror", States: []workflow.State{
			{Name: "run", Kind: workflow.Start, Handler: alwaysFails, Next: []string{"done"}, Retry: quickRetry},
			{Name: "done", Kind: workflow.End}, {Name: "broken", Kind: workflow.ErrorKind}}}
		var healed atomic.Bool
		manual := workflow.Definition{Type: "t.manual", States: []workflow.State{
			{Name: "run", Kind: workflow.Start, Retry: quickRetry, Next: []string{"done"}, Handler: func(ctx workflow.StepContext) (workflow.Next, error) {
				if healed.Load() {
					return workflow.MoveTo("done"), nil
				}
				return workflow.Next{}, errors.New("still broken")
			}},
			{Name: "done", Kind: workflow.End}}}
		b := setup(t, store, withError, manual)
		b.startWorker(t, fastOptions())

		w1 := b.start(t, "t.witherror", `{}`)
		failed := b.waitStatus(t, w1.ID, persistence.StatusFailed)
		require.Equal(t, "broken", failed.State)
		require.Equal(t, "boom", *failed.LastError)
		actions := b.actions(t, w1.ID)
		require.Len(t, actions, 2)
		require.Equal(t, persistence.ActionStateExecutionFailed, actions[1].Type)
		require.Equal(t, "run", *actions[1].FromState)
		require.Equal(t, "broken", actions[1].State)

		w2 := b.start(t, "t.manual", `{}`)
		stuck := b.waitStatus(t, w2.ID, persistence.StatusManual)
		require.Equal(t, "run", stuck.State)
		require.Equal(t, 2, stuck.Retries)

		// An operator fixes the cause and retries: the count resets and the state runs again.
		healed.Store(true)
		retried, err := b.engine.Retry(context.Background(), workflow.RetryParams{ChangeParams: workflow.ChangeParams{ID: w2.ID, Reason: "fixed", Actor: "ops"}})
		require.NoError(t, err)
		require.Zero(t, retried.Retries)
		b.waitStatus(t, w2.ID, persistence.StatusFinished)

		// A FAILED workflow retries from the state that failed.
		retried, err = b.engine.Retry(context.Background(), workflow.RetryParams{ChangeParams: workflow.ChangeParams{ID: w1.ID}})
		require.NoError(t, err)
		require.Equal(t, "run", retried.State)
		require.Nil(t, retried.Finished)
		b.waitStatus(t, w1.ID, persistence.StatusFailed)
		_, err = b.engine.Retry(context.Background(), workflow.RetryParams{ChangeParams: workflow.ChangeParams{ID: w1.ID}, State: "nowhere"})
		require.Equal(t, workflow.CodeInvalidInput, workflow.CodeOf(err))
	})
}

func TestTimeoutsAndPanicsAreFailedAttempts(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		block := make(chan struct{})
		t.Cleanup(func() { close(block) })
		def := func(typ string, h workflow.StepFunc) workflow.Definition {
			return workflow.Definition{Type: typ, States: []workflow.State{
				{Name: "run", Kind: workflow.Start, Handler: h, Next: []string{"done"}, Timeout: 50 * time.Millisecond,
					Retry: &workflow.RetryPolicy{MaxAttempts: 1}},
				{Name: "done", Kind: workflow.End}}}
		}
		polite := def("t.polite", func(ctx workflow.StepContext) (workflow.Next, error) {
			<-ctx.Done()
			return workflow.Next{}, ctx.Err()
		})
		rude := def("t.rude", func(ctx workflow.StepContext) (workflow.Next, error) {
			<-block // ignores its context
			return workflow.Finish(), nil
		})
		panics := def("t.panics", func(ctx workflow.StepContext) (workflow.Next, error) {
			var steps []string
			_ = steps[len(ctx.State())] // index out of range: a bug in a step
			return workflow.Finish(), nil
		})
		invalidMove := def("t.badmove", func(ctx workflow.StepContext) (workflow.Next, error) {
			return workflow.MoveTo("run"), nil
		})
		b := setup(t, store, polite, rude, panics, invalidMove)
		b.startWorker(t, fastOptions())

		for typ, want := range map[string]persistence.TaskStatus{"t.polite": persistence.TaskTimedOut, "t.rude": persistence.TaskTimedOut,
			"t.panics": persistence.TaskFailed, "t.badmove": persistence.TaskFailed} {
			w := b.start(t, typ, `{}`)
			got := b.waitStatus(t, w.ID, persistence.StatusManual)
			tasks := b.tasks(t, w.ID)
			require.Len(t, tasks, 1, typ)
			require.Equal(t, want, tasks[0].Status, typ)
			switch typ {
			case "t.panics":
				require.Contains(t, *got.LastError, `"title":"internal error"`)
				require.NotContains(t, *got.LastError, "goroutine")
			case "t.badmove":
				require.Contains(t, *got.LastError, `cannot move to "run"`)
			default:
				require.Contains(t, *got.LastError, "time")
			}
		}
		// The node is still working.
		w := b.start(t, "bench.noop", `{}`)
		b.waitStatus(t, w.ID, persistence.StatusFinished)
	})
}

func TestFanoutChildrenWakeTheirParent(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		b.startWorker(t, fastOptions())
		parent := b.start(t, "demo.fanout", `{"children": 5}`)
		done := b.waitStatus(t, parent.ID, persistence.StatusFinished)
		require.Equal(t, "done", done.State)

		var children []*persistence.Workflow
		all, err := store.WorkflowGetMany(context.Background(), []int64{parent.ID + 1, parent.ID + 2, parent.ID + 3, parent.ID + 4, parent.ID + 5})
		require.NoError(t, err)
		for _, c := range all {
			if c.ParentID != nil && *c.ParentID == parent.ID {
				children = append(children, c)
			}
		}
		require.Len(t, children, 5)
		for _, c := range children {
			require.Equal(t, persistence.StatusFinished, c.Status)
			require.Equal(t, parent.ID, *c.RootID)
			require.NotNil(t, c.ParentActionID)
			require.True(t, c.Finished.Before(*done.Finished) || c.Finished.Equal(*done.Finished))
		}
		empty := b.start(t, "demo.fanout", `{"children": 0}`)
		b.waitStatus(t, empty.ID, persistence.StatusFinished)
	})
}

func TestSignalsEarlyAndLate(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		b := setup(t, store)
		b.startWorker(t, fastOptions())

		late := b.start(t, "demo.approval", `{}`)
		waiting := b.waitStatus(t, late.ID, persistence.StatusWaiting)
		require.Equal(t, "await", waiting.State)
		_, err := b.engine.Signal(ctx, workflow.SignalParams{ID: late.ID, Name: "other"})
		require.NoError(t, err)
		time.Sleep(100 * time.Millisecond)
		still, err := store.WorkflowGet(ctx, late.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusWaiting, still.Status, "another signal does not release it")
		_, err = b.engine.Signal(ctx, workflow.SignalParams{ID: late.ID, Name: "approve", Payload: json.RawMessage(`{"by":"ann"}`)})
		require.NoError(t, err)
		done := b.waitStatus(t, late.ID, persistence.StatusFinished)
		require.Equal(t, map[string]any{"by": "ann"}, vars(t, done)["approval"])

		// Early: the signal arrives before the workflow has even run; it is kept.
		future := time.Now().Add(300 * time.Millisecond)
		res, err := b.engine.Start(ctx, workflow.StartParams{Type: "demo.approval", StartAt: &future})
		require.NoError(t, err)
		_, err = b.engine.Signal(ctx, workflow.SignalParams{ID: res.Workflow.ID, Name: "approve"})
		require.NoError(t, err)
		b.waitStatus(t, res.Workflow.ID, persistence.StatusFinished)
		sigs, err := store.SignalList(ctx, []int64{res.Workflow.ID})
		require.NoError(t, err)
		require.Len(t, sigs, 1)
		require.NotNil(t, sigs[0].Consumed)
		require.NotNil(t, sigs[0].ConsumedActionID)
	})
}

func TestCancelStopsTheRunningStep(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		b := setup(t, store)
		b.startWorker(t, steadyOptions())
		w := b.start(t, "demo.order", `{"shipDelayMs": 60000}`)
		b.waitFor(t, w.ID, "shipping", func(w *persistence.Workflow) bool {
			return w.State == "ship" && w.Status == persistence.StatusExecuting
		})
		cancelled, err := b.engine.Cancel(ctx, workflow.ChangeParams{ID: w.ID, Reason: "changed my mind"})
		require.NoError(t, err)
		require.Equal(t, persistence.StatusCancelled, cancelled.Status)
		// The step saw its context cancelled and returned at once; its result was fenced off and
		// the attempt recorded as CANCELLED.
		require.Eventually(t, func() bool { return len(b.tasks(t, w.ID)) == 3 }, 5*time.Second, 10*time.Millisecond)
		time.Sleep(100 * time.Millisecond)
		final, err := store.WorkflowGet(ctx, w.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusCancelled, final.Status)
		require.Equal(t, "ship", final.State)
		require.Nil(t, final.ExecutorID, "the cancelled attempt let go of the workflow")
		tasks := b.tasks(t, w.ID)
		var seen []string
		for _, ti := range tasks {
			seen = append(seen, fmt.Sprintf("%s %s %v", ti.State, ti.Status, ti.Error))
		}
		require.Len(t, tasks, 3, "the cancelled step records only its CANCELLED attempt: %v", seen)
		require.Equal(t, persistence.TaskCancelled, tasks[2].Status)
		require.Equal(t, "ship", tasks[2].State)
	})
}

func TestPauseDuringAStepRunsItAgainAfterResume(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		b := setup(t, store)
		b.startWorker(t, steadyOptions())
		// Long enough for a loaded machine to see the step running before it ends.
		w := b.start(t, "demo.order", `{"shipDelayMs": 2000}`)
		b.waitFor(t, w.ID, "shipping", func(w *persistence.Workflow) bool {
			return w.State == "ship" && w.Status == persistence.StatusExecuting
		})
		_, err := b.engine.Pause(ctx, workflow.ChangeParams{ID: w.ID})
		require.NoError(t, err)
		time.Sleep(500 * time.Millisecond)
		paused, err := store.WorkflowGet(ctx, w.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusPaused, paused.Status, "the step's late completion does not overwrite the pause")
		_, err = b.engine.Resume(ctx, workflow.ChangeParams{ID: w.ID})
		require.NoError(t, err)
		b.waitStatus(t, w.ID, persistence.StatusFinished)
	})
}

// A step records a side effect and its executor dies mid-step. Another executor takes the workflow
// over (RECOVERY action, LOST task instance), runs the step again and gets the recorded value; the
// dead executor's late completion writes nothing.
func TestSideEffectOnceAcrossACrashAndStaleExecutorFenced(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		var calls atomic.Int32
		release := make(chan struct{})
		var firstRun atomic.Bool
		firstRun.Store(true)
		def := workflow.Definition{Type: "t.crash", States: []workflow.State{
			{Name: "run", Kind: workflow.Start, Next: []string{"done"}, Handler: func(ctx workflow.StepContext) (workflow.Next, error) {
				v, err := workflow.SideEffect(ctx, "token", func() (string, error) {
					calls.Add(1)
					return time.Now().String(), nil
				})
				if err != nil {
					return workflow.Next{}, err
				}
				if err := ctx.SetVar("token", v); err != nil {
					return workflow.Next{}, err
				}
				if firstRun.CompareAndSwap(true, false) {
					<-release // the "crashed" run never gets further until the test lets it
				}
				return workflow.MoveTo("done"), nil
			}},
			{Name: "done", Kind: workflow.End}}}
		b := setup(t, store, def)
		w := b.start(t, "t.crash", `{}`)

		dead, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "dead", PID: 1, Group: "default", Expiry: 300 * time.Millisecond})
		require.NoError(t, err)
		claimed, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: dead.ID, Group: "default", Limit: 1, Now: persistence.Now(), StepDeadline: persistence.Now().Add(time.Minute), Types: []string{"bench.noop", "t.crash"}})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		staleOutcome := make(chan *outcome, 1)
		go func() {
			staleOutcome <- b.engine.Execute(ctx, executeParams{Workflow: claimed[0], ExecutorID: dead.ID, Host: "dead"})
		}()
		require.Eventually(t, func() bool { return calls.Load() == 1 }, 5*time.Second, 5*time.Millisecond)

		b.startWorker(t, fastOptions())
		done := b.waitStatus(t, w.ID, persistence.StatusFinished)
		require.EqualValues(t, 1, calls.Load(), "the side effect ran once")

		actions := b.actions(t, w.ID)
		require.Len(t, actions, 2)
		require.Equal(t, persistence.ActionRecovery, actions[0].Type)
		require.Equal(t, persistence.ActionStateExecution, actions[1].Type)
		tasks := b.tasks(t, w.ID)
		require.Len(t, tasks, 2)
		require.Equal(t, persistence.TaskLost, tasks[0].Status)
		require.Equal(t, dead.ID, *tasks[0].ExecutorID)
		se, err := store.SideEffectGet(ctx, w.ID, "token")
		require.NoError(t, err)
		require.JSONEq(t, string(se.Value), string(mustJSON(t, vars(t, done)["token"])))

		// The dead executor wakes up and completes: fenced, nothing written.
		close(release)
		written, err := b.engine.Complete(ctx, []*outcome{<-staleOutcome})
		require.NoError(t, err)
		require.Empty(t, written)
		require.Len(t, b.actions(t, w.ID), 2)
		after, err := store.WorkflowGet(ctx, w.ID)
		require.NoError(t, err)
		require.Equal(t, done.Version, after.Version)
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func TestCancelReachesEveryDescendant(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		b := setup(t, store)
		b.startWorker(t, fastOptions())
		parent := b.start(t, "demo.fanout", `{"children": 3, "childInput": {"shipDelayMs": 60000}}`)
		b.waitStatus(t, parent.ID, persistence.StatusWaiting)
		_, err := b.engine.Cancel(ctx, workflow.ChangeParams{ID: parent.ID, Reason: "stop everything"})
		require.NoError(t, err)
		children, _, err := store.WorkflowList(ctx, persistence.WorkflowListParams{Filter: persistence.WorkflowFilter{ParentID: &parent.ID}, Limit: 10})
		require.NoError(t, err)
		require.Len(t, children, 3)
		for _, c := range children {
			require.Equal(t, persistence.StatusCancelled, c.Status)
			actions := b.actions(t, c.ID)
			require.Contains(t, *actions[len(actions)-1].StateText, "was cancelled")
		}
		// The children's running ship steps were cancelled: no ship success, a ship attempt that ran
		// is recorded as CANCELLED, and the status stays CANCELLED.
		time.Sleep(300 * time.Millisecond)
		for _, c := range children {
			got, err := store.WorkflowGet(ctx, c.ID)
			require.NoError(t, err)
			require.Equal(t, persistence.StatusCancelled, got.Status)
			for _, a := range b.actions(t, c.ID) {
				require.False(t, a.Type == persistence.ActionStateExecution && *a.FromState == "ship", "a cancelled ship step recorded a success")
			}
			for _, ti := range b.tasks(t, c.ID) {
				if ti.State == "ship" {
					require.Equal(t, persistence.TaskCancelled, ti.Status, "a cancelled ship step recorded a result")
				}
			}
		}
	})
}

// A step that outlives the drain timeout is released for another node and cancelled; its late
// result neither crashes the stopped pool nor overwrites the released workflow.
func TestDrainTimeoutReleasesStepsStillRunning(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		var runs atomic.Int32
		slow := workflow.Definition{Type: "t.slow", States: []workflow.State{
			{Name: "run", Kind: workflow.Start, Next: []string{"done"}, Handler: func(c workflow.StepContext) (workflow.Next, error) {
				if runs.Add(1) == 1 {
					time.Sleep(700 * time.Millisecond) // ignores its context, as badly written steps do
				}
				return workflow.MoveTo("done"), nil
			}},
			{Name: "done", Kind: workflow.End}}}
		b := setup(t, store, slow)
		opts := fastOptions()
		opts.DrainTimeout = 100 * time.Millisecond
		first := pool.New(b.engine, opts)
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- first.Run(runCtx) }()

		w := b.start(t, "t.slow", `{}`)
		b.waitStatus(t, w.ID, persistence.StatusExecuting)
		stop()
		require.NoError(t, <-done)
		released, err := store.WorkflowGet(ctx, w.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusInProgress, released.Status, "released at shutdown")
		require.Zero(t, released.Retries, "a step released by a graceful stop spends no attempt")
		require.Nil(t, released.LastError)
		time.Sleep(800 * time.Millisecond) // the abandoned step returns into the stopped pool

		b.startWorker(t, fastOptions())
		b.waitStatus(t, w.ID, persistence.StatusFinished)
		actions := b.actions(t, w.ID)
		require.Len(t, actions, 2)
		require.Equal(t, persistence.ActionRecovery, actions[0].Type)
		require.Equal(t, persistence.ActionStateExecution, actions[1].Type)
	})
}

// The drain waits for a running step, writes its result and returns as soon as the last step was
// completed: the workflow finishes on this node instead of being released for another one.
func TestDrainCompletesTheLastStepThenReturns(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		release, running := make(chan struct{}), make(chan struct{}, 1)
		held := workflow.Definition{Type: "t.held", States: []workflow.State{
			{Name: "run", Kind: workflow.Start, Next: []string{"done"}, Handler: func(c workflow.StepContext) (workflow.Next, error) {
				running <- struct{}{}
				<-release
				return workflow.MoveTo("done"), nil
			}},
			{Name: "done", Kind: workflow.End}}}
		b := setup(t, store, held)
		opts := steadyOptions()
		opts.DrainTimeout = time.Minute
		pool := pool.New(b.engine, opts)
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- pool.Run(runCtx) }()

		w := b.start(t, "t.held", `{}`)
		// The step runs (claimed is not enough: a pool stopped between its claim and the step's
		// start releases the workflow instead, and has nothing to drain).
		<-running
		stop()
		select {
		case err := <-done:
			t.Fatalf("Run returned (%v) while a step was still running", err)
		case <-time.After(200 * time.Millisecond):
		}
		close(release)
		released := time.Now()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after the last step finished")
		}
		require.Less(t, time.Since(released), 5*time.Second, "the drain ends with its last step, not at its timeout")
		got, err := store.WorkflowGet(ctx, w.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusFinished, got.Status, "completed during the drain")
		require.Zero(t, pool.InFlight())
	})
}
