package pool_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/internal/maintenance"
	"github.com/cairnflow/cairn/internal/pool"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
	"github.com/cairnflow/cairn/workflow/demo"
)

// bundle is what a worker test works with.
type bundle struct {
	store  *persistence.Store
	engine *engine.Engine
}

func testLogger() *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("CAIRN_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// setup returns an engine with the demo definitions (and any extra ones) registered on store.
func setup(t *testing.T, store *persistence.Store, defs ...workflow.Definition) *bundle {
	t.Helper()
	ctx := context.Background()
	log := testLogger()
	notifier := persistence.NewNotifier(store, log)
	engine := engine.New(store, engine.Options{Logger: log, Notifier: notifier})
	require.NoError(t, demo.Register(ctx, engine))
	for _, d := range defs {
		_, err := engine.Register(ctx, d)
		require.NoError(t, err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		go engine.RunCancelListener(runCtx)
		notifier.Run(runCtx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return &bundle{store: store, engine: engine}
}

// fastOptions are worker options that make recovery and polling quick enough for tests.
func fastOptions() pool.Options {
	return pool.Options{Concurrency: 20, PollInterval: 50 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond,
		Expiry: 600 * time.Millisecond, DrainTimeout: 5 * time.Second, Logger: testLogger()}
}

// steadyOptions are fastOptions with an expiry no loaded machine misses, for tests that assert
// nothing was recovered (recovery has tests of its own).
func steadyOptions() pool.Options {
	o := fastOptions()
	o.Expiry = 10 * time.Second
	return o
}

// startWorker runs a worker until the test ends (and waits for its drain), with the recovery of
// dead executors' work that a node runs beside its pools (as this pool's executor); prepare
// runs on the worker before it starts.
func (b *bundle) startWorker(t *testing.T, opts pool.Options, prepare ...func(*pool.Worker)) *pool.Worker {
	t.Helper()
	w := pool.New(b.engine, opts)
	for _, f := range prepare {
		f(w)
	}
	interval := opts.HeartbeatInterval
	if interval <= 0 {
		interval = 2 * time.Second
	}
	recovery, err := maintenance.NewRecovery(maintenance.RecoveryConfig{Interval: interval, Logger: testLogger(),
		Recover: func(ctx context.Context) (int, error) {
			if w.ExecutorID() == 0 {
				return 0, nil
			}
			return b.engine.Recover(ctx, recoverParams{ExecutorID: w.ExecutorID()})
		}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	require.NoError(t, recovery.Start(ctx))
	t.Cleanup(func() {
		cancel()
		recovery.Stop()
		require.NoError(t, <-done)
	})
	return w
}

// sweepLeases runs the node's sweep of remote tasks whose lease ran out until the test ends.
func (b *bundle) sweepLeases(t *testing.T) {
	t.Helper()
	sweeper, err := maintenance.NewLeaseSweeper(maintenance.LeaseSweeperConfig{Interval: engine.LeaseSweep,
		Expire: b.engine.ExpireTaskLeases, CancelEvery: 20, Logger: testLogger(),
		CancelEnded: func(ctx context.Context) (int, error) {
			n, err := b.store.RemoteTaskCancelEnded(ctx, persistence.Now())
			return int(n), err
		}})
	require.NoError(t, err)
	require.NoError(t, sweeper.Start(context.Background()))
	t.Cleanup(sweeper.Stop)
}

func (b *bundle) start(t *testing.T, typ string, input string) *persistence.Workflow {
	t.Helper()
	res, err := b.engine.Start(context.Background(), workflow.StartParams{Type: typ, Input: json.RawMessage(input)})
	require.NoError(t, err)
	require.True(t, res.Created)
	return res.Workflow
}

// waitFor polls a workflow until cond holds, failing the test after a generous deadline.
func (b *bundle) waitFor(t *testing.T, id int64, what string, cond func(w *persistence.Workflow) bool) *persistence.Workflow {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		w, err := b.store.WorkflowGet(context.Background(), id)
		require.NoError(t, err)
		if cond(w) {
			return w
		}
		if time.Now().After(deadline) {
			t.Fatalf("workflow %d never became %s: status %s state %s lastError %v", id, what, w.Status, w.State, deref(w.LastError))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (b *bundle) waitStatus(t *testing.T, id int64, status persistence.Status) *persistence.Workflow {
	t.Helper()
	return b.waitFor(t, id, string(status), func(w *persistence.Workflow) bool { return w.Status == status })
}

func (b *bundle) actions(t *testing.T, id int64) []*persistence.Action {
	t.Helper()
	as, err := b.store.ActionList(context.Background(), persistence.ActionListParams{WorkflowIDs: []int64{id}})
	require.NoError(t, err)
	return as
}

func (b *bundle) tasks(t *testing.T, id int64) []*persistence.TaskInstance {
	t.Helper()
	ts, err := b.store.TaskInstanceList(context.Background(), persistence.TaskInstanceListParams{WorkflowIDs: []int64{id}})
	require.NoError(t, err)
	return ts
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func vars(t *testing.T, w *persistence.Workflow) map[string]any {
	t.Helper()
	m := map[string]any{}
	require.NoError(t, json.Unmarshal(w.Variables, &m))
	return m
}

func demoDefs() []workflow.Definition { return demo.Definitions() }
