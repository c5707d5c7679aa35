package cairn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// remoteEcho is a definition whose one step calls a remote function and keeps its result.
func remoteEcho(typ, function string) workflow.Definition {
	return workflow.Definition{Type: typ, States: []workflow.State{
		{Name: "call", Kind: workflow.Start, Next: []string{"done"}, Handler: func(c workflow.StepContext) (workflow.Next, error) {
			out, err := c.CallRemote(function, map[string]any{})
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

// pollTask polls a function's tasks until one arrives or the time is up (nil then).
func pollTask(t *testing.T, e *engine.Engine, function string, leaseMs int, worker string, within time.Duration) *workflow.LeasedTask {
	t.Helper()
	wait := 500
	for end := time.Now().Add(within); time.Now().Before(end); {
		got, err := e.PollTasks(context.Background(), workflow.PollTasksParams{Functions: []string{function}, WaitMs: &wait, LeaseMs: &leaseMs, Worker: worker})
		require.NoError(t, err)
		if len(got) == 1 {
			return &got[0]
		}
	}
	return nil
}

// An embedded node (New and Run, nothing started by hand) offers a dead remote worker's task again
// once its lease runs out, and the workflow finishes with the second worker's result.
func TestEmbeddedNodeReoffersADeadRemoteWorkersTask(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		node := newNode(t, store, fastOptions(), remoteEcho("remote.gone", "gone"))
		run(t, node)
		w := start(t, node, "remote.gone", `{}`)
		first := pollTask(t, node.engine, "gone", 1000, "dies", 30*time.Second)
		require.NotNil(t, first, "the task is offered")
		// The first worker is gone: it never heartbeats or completes the task.
		second := pollTask(t, node.engine, "gone", 30000, "lives", 15*time.Second)
		require.NotNil(t, second, "the task is offered again once its lease ran out")
		require.Equal(t, first.ID, second.ID)
		require.Equal(t, first.Attempt+1, second.Attempt)
		_, err := node.engine.CompleteTask(context.Background(), second.Token, json.RawMessage(`"fresh"`), nil)
		require.NoError(t, err)
		done := waitStatus(t, store, w.ID, persistence.StatusFinished)
		require.JSONEq(t, `{"result": "fresh"}`, string(done.Variables))
	})
}

// Run returns after its context ended with everything it started stopped: no goroutine of cairn's
// code is left, on every backend (one after the other: it reads the process's goroutines).
func TestRunLeavesNoGoroutine(t *testing.T) {
	// Not parallel: the parallel tests wait at their start until it ended.
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			store := dbtest.Open(t, kind)
			opts := fastOptions()
			opts.Groups = []string{workflow.DefaultGroup, "b"}
			opts.Retention = time.Hour
			opts.EventRetention = time.Hour
			node := newNode(t, store, opts)
			require.Empty(t, cairnGoroutines(), "no node runs before")

			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- node.Run(ctx) }()
			w := start(t, node, "demo.order", `{}`)
			waitStatus(t, store, w.ID, persistence.StatusFinished)
			require.Greater(t, len(cairnGoroutines()), 10, "the pools and services run")
			cancel()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(20 * time.Second):
				t.Fatal("Run did not return after its context ended")
			}
			// Run returned once everything it started stopped; a goroutine's last frames may
			// still be unwinding, so look again for a moment.
			var left []string
			for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				if left = cairnGoroutines(); len(left) == 0 {
					break
				}
			}
			require.Empty(t, left, "goroutines left after Run returned")
			executors, err := store.ExecutorList(context.Background())
			require.NoError(t, err)
			require.Len(t, executors, 2)
			for _, ex := range executors {
				require.NotNil(t, ex.Stopped, "the executor of each pool is marked stopped")
			}
		})
	}
}

// cairnGoroutines returns the stacks of the goroutines running code of this module other than
// tests (database drivers' and the runtime's goroutines are not counted: they outlive a node).
func cairnGoroutines() []string {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(file) + "/"
	buf := make([]byte, 4<<20)
	var out []string
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		for _, line := range strings.Split(g, "\n") {
			path, _, _ := strings.Cut(strings.TrimSpace(line), ":")
			if strings.HasPrefix(path, root) && !strings.HasSuffix(path, "_test.go") && !strings.Contains(path, "/persistence/dbtest/") {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

func TestNodePurgesEndedWorkflows(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		opts := fastOptions()
		opts.Retention = time.Second
		node := newNode(t, store, opts)
		run(t, node)
		w := start(t, node, "demo.order", `{}`)
		waitStatus(t, store, w.ID, persistence.StatusFinished)
		require.Eventually(t, func() bool {
			_, err := store.WorkflowGet(ctx, w.ID)
			return errors.Is(err, persistence.ErrNotFound)
		}, 20*time.Second, 50*time.Millisecond, "an ended workflow older than the retention is purged")
		actions, err := store.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: []int64{w.ID}})
		require.NoError(t, err)
		require.Empty(t, actions)
		running := start(t, node, "demo.approval", `{}`)
		waitStatus(t, store, running.ID, persistence.StatusWaiting)
		time.Sleep(1500 * time.Millisecond)
		_, err = store.WorkflowGet(ctx, running.ID)
		require.NoError(t, err, "a workflow that has not ended stays")
	})
}

func TestNodesFireSchedules(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		node := newNode(t, store, fastOptions())
		run(t, node)
		run(t, newNode(t, store, fastOptions())) // two nodes: each fire still starts one run
		sc, err := node.engine.CreateSchedule(ctx, workflow.ScheduleParams{Type: "bench.noop", Cron: "@every 1s"})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			n, err := store.WorkflowCount(ctx, persistence.WorkflowFilter{Types: []string{"bench.noop"}, Statuses: []persistence.Status{persistence.StatusFinished}})
			require.NoError(t, err)
			return n >= 2
		}, 20*time.Second, 50*time.Millisecond, "the schedule's runs start and finish")
		_, err = node.engine.SetSchedulePaused(ctx, sc.ID, true)
		require.NoError(t, err)
		runs, _, err := store.WorkflowList(ctx, persistence.WorkflowListParams{Filter: persistence.WorkflowFilter{Types: []string{"bench.noop"}}, Limit: 100})
		require.NoError(t, err)
		for _, r := range runs {
			require.Equal(t, fmt.Sprintf("schedule:%d", sc.ID), *r.LaunchToken)
		}
		got, err := store.ScheduleGet(ctx, sc.ID)
		require.NoError(t, err)
		require.NotNil(t, got.LastFire)
		require.LessOrEqual(t, len(runs), int(time.Since(sc.Created)/time.Second)+2, "no fire started two runs")
	})
}

func TestNodeTrimsOldChangeEvents(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		opts := fastOptions()
		opts.EventRetention = time.Second
		node := newNode(t, store, opts)
		run(t, node)
		w := start(t, node, "demo.order", `{}`)
		waitStatus(t, store, w.ID, persistence.StatusFinished)
		require.Eventually(t, func() bool {
			events, err := store.ChangeEventList(ctx, persistence.ChangeEventListParams{Limit: 10})
			require.NoError(t, err)
			return len(events) == 0
		}, 20*time.Second, 50*time.Millisecond, "events older than the window are trimmed")
		_, err := store.WorkflowGet(ctx, w.ID)
		require.NoError(t, err, "the workflow stays: events have a window of their own")
	})
}

// A node on PostgreSQL analyzes a table whose statistics count none of the rows it holds (analyzed
// while all its rows were deleted, then filled again), without waiting for autovacuum (turned off
// for the table here): until then the planner took it for empty.
func TestNodeRefreshesStatisticsOfARefilledTable(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, persistence.KindPostgres)
	ctx := context.Background()
	_, err := store.DB().ExecContext(ctx, "ALTER TABLE workflows SET (autovacuum_enabled = false)")
	require.NoError(t, err)
	insert := func(n int) {
		now := persistence.Now()
		wfs := make([]*persistence.Workflow, n)
		for i := range wfs { // a group no pool of the node serves
			wfs[i] = &persistence.Workflow{Type: "refill", DefinitionVersion: 1, Status: persistence.StatusCreated, State: "start",
				ExecutorGroup: "parked", NextActivation: &now}
		}
		require.NoError(t, store.WorkflowInsertMany(ctx, wfs))
	}
	insert(persistence.StaleStatisticsRows)
	_, err = store.DB().ExecContext(ctx, "DELETE FROM workflows")
	require.NoError(t, err)
	_, err = store.DB().ExecContext(ctx, "ANALYZE workflows")
	require.NoError(t, err)
	reltuples := func() float64 {
		var n float64
		require.NoError(t, store.DB().QueryRowContext(ctx, "SELECT reltuples FROM pg_class WHERE oid = 'workflows'::regclass").Scan(&n))
		return n
	}
	require.Zero(t, reltuples())
	insert(4 * persistence.StaleStatisticsRows)
	run(t, newNode(t, store, fastOptions()))
	require.Eventually(t, func() bool { return reltuples() > float64(2*persistence.StaleStatisticsRows) }, time.Minute, 50*time.Millisecond)
}
