package engine_test

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/internal/pool"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// waitEngine returns an engine with t.wait definitions registered: t.wait.gate finishes once gate
// is closed, t.wait.fail fails at once, t.wait.steps runs a, b and ends in done. Without a pool
// running, a started workflow stays CREATED.
func waitEngine(t *testing.T, store *persistence.Store, gate chan struct{}) *engine.Engine {
	t.Helper()
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	engine := engine.New(store, engine.Options{Logger: quiet})
	move := func(to string) workflow.StepFunc {
		return func(workflow.StepContext) (workflow.Next, error) { return workflow.MoveTo(to), nil }
	}
	for _, d := range []workflow.Definition{
		{Type: "t.wait.gate", States: []workflow.State{
			{Name: "run", Kind: workflow.Start, Next: []string{"done"}, Handler: func(c workflow.StepContext) (workflow.Next, error) {
				select {
				case <-gate:
				case <-c.Done():
					return workflow.Next{}, c.Err()
				}
				if err := c.SetVar("ran", true); err != nil {
					return workflow.Next{}, err
				}
				return workflow.MoveTo("done"), nil
			}},
			{Name: "done", Kind: workflow.End}}},
		{Type: "t.wait.fail", States: []workflow.State{
			{Name: "run", Kind: workflow.Start, Next: []string{"done"}, Handler: func(workflow.StepContext) (workflow.Next, error) {
				return workflow.Fail("no"), nil
			}},
			{Name: "done", Kind: workflow.End},
			{Name: "failed", Kind: workflow.ErrorKind}}},
		{Type: "t.wait.steps", States: []workflow.State{
			{Name: "a", Kind: workflow.Start, Next: []string{"b"}, Handler: move("b")},
			{Name: "b", Kind: workflow.Normal, Next: []string{"done"}, Handler: move("done")},
			{Name: "done", Kind: workflow.End}}},
	} {
		_, err := engine.Register(ctx, d)
		require.NoError(t, err)
	}
	return engine
}

// runPool runs a worker pool over the engine until the test ends.
func runPool(t *testing.T, engine *engine.Engine) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pool := pool.New(engine, pool.Options{Concurrency: 4, PollInterval: 50 * time.Millisecond,
		HeartbeatInterval: 100 * time.Millisecond, Expiry: 10 * time.Second, DrainTimeout: 5 * time.Second, Logger: engine.Logger()})
	done := make(chan error, 1)
	go func() { done <- pool.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
}

func start(t *testing.T, engine *engine.Engine, typ string) int64 {
	t.Helper()
	res, err := engine.Start(context.Background(), workflow.StartParams{Type: typ})
	require.NoError(t, err)
	return res.Workflow.ID
}

type waited struct {
	w   *persistence.Workflow
	err error
}

func waitAsync(ctx context.Context, engine *engine.Engine, id int64) <-chan waited {
	ch := make(chan waited, 1)
	go func() {
		w, err := engine.Wait(ctx, id)
		ch <- waited{w, err}
	}()
	return ch
}

func TestWaitReturnsWhenTheWorkflowEnds(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		gate := make(chan struct{})
		engine := waitEngine(t, store, gate)
		runPool(t, engine)

		id := start(t, engine, "t.wait.gate")
		got := waitAsync(ctx, engine, id)
		select {
		case r := <-got:
			t.Fatalf("Wait returned before the workflow ended: %+v", r)
		case <-time.After(300 * time.Millisecond):
		}
		close(gate)
		var r waited
		select {
		case r = <-got:
		case <-time.After(30 * time.Second):
			t.Fatal("Wait did not return once the workflow finished")
		}
		require.NoError(t, r.err)
		require.Equal(t, persistence.StatusFinished, r.w.Status)
		require.Equal(t, "done", r.w.State)
		require.JSONEq(t, `{"ran": true}`, string(r.w.Variables))

		// An ended workflow: at once.
		w, err := engine.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusFinished, w.Status)

		failed, err := engine.Wait(ctx, start(t, engine, "t.wait.fail"))
		require.NoError(t, err)
		require.Equal(t, persistence.StatusFailed, failed.Status)
		require.Equal(t, "failed", failed.State)

		_, err = engine.Wait(ctx, 1<<40)
		require.Equal(t, workflow.CodeNotFound, workflow.CodeOf(err), "error: %v", err)
	})
}

// Wait hears a change made on this node from the notifier, well before its fallback poll.
func TestWaitHearsAnOperationAtOnce(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := waitEngine(t, store, nil)
		id := start(t, engine, "t.wait.steps") // no pool: it stays CREATED
		got := waitAsync(ctx, engine, id)
		time.Sleep(100 * time.Millisecond) // Wait has read the workflow and waits
		cancelled := time.Now()
		_, err := engine.Cancel(ctx, workflow.ChangeParams{ID: id, Actor: "test"})
		require.NoError(t, err)
		r := <-got
		require.NoError(t, r.err)
		require.Equal(t, persistence.StatusCancelled, r.w.Status)
		require.Less(t, time.Since(cancelled), 500*time.Millisecond, "woken by the hint, not the 1s poll")
	})
}

func TestWaitAndFollowEndWithTheirContext(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		engine := waitEngine(t, store, nil)
		id := start(t, engine, "t.wait.steps")

		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		began := time.Now()
		_, err := engine.Wait(ctx, id)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Less(t, time.Since(began), 2*time.Second)

		ctx, cancel = context.WithCancel(context.Background())
		seq := engine.Follow(ctx, id)
		time.AfterFunc(200*time.Millisecond, cancel)
		var errs []error
		for ev, err := range seq {
			require.Nil(t, ev, "nothing happened to the workflow")
			errs = append(errs, err)
		}
		require.Len(t, errs, 1)
		require.ErrorIs(t, errs[0], context.Canceled)
	})
}

func TestFollowSeesTheTransitionsInOrder(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		engine := waitEngine(t, store, nil)
		id := start(t, engine, "t.wait.steps")
		other := start(t, engine, "t.wait.steps") // its events are not ours

		seq := engine.Follow(ctx, id)
		runPool(t, engine) // the steps run only now, after Follow took its position
		type change struct {
			Type   string
			Status persistence.Status
			State  string
		}
		var got []change
		for ev, err := range seq {
			require.NoError(t, err)
			require.Equal(t, id, ev.WorkflowID)
			got = append(got, change{ev.Type, ev.Status, ev.State})
		}
		if len(got) > 0 && got[0].Type == workflow.EventCreated {
			// PostgreSQL's stream is readable up to the oldest transaction still running anywhere
			// on the server: Follow's position may lie just before the start's commit.
			got = got[1:]
		}
		exec := string(persistence.ActionStateExecution)
		require.Equal(t, []change{{exec, persistence.StatusInProgress, "b"}, {exec, persistence.StatusFinished, "done"}}, got)

		// Once ended, the workflow has nothing more to follow.
		_, err := engine.Wait(ctx, other)
		require.NoError(t, err)
		for ev, err := range engine.Follow(ctx, id) {
			t.Fatalf("an ended workflow gave %v, %v", ev, err)
		}
		var errs []error
		for _, err := range engine.Follow(ctx, 1<<40) {
			errs = append(errs, err)
		}
		require.Len(t, errs, 1)
		require.Equal(t, workflow.CodeNotFound, workflow.CodeOf(errs[0]))
	})
}
