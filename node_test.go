package cairn

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
	"github.com/cairnflow/cairn/workflow/demo"
)

func testLogger() *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("CAIRN_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// fastOptions make recovery and polling quick enough for tests.
func fastOptions() Options {
	return Options{Logger: testLogger(), Concurrency: 20, PollInterval: 50 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond,
		Expiry: 2 * time.Second, DrainTimeout: 5 * time.Second}
}

// newNode builds a node with the demo definitions (and defs) registered.
func newNode(t *testing.T, store *persistence.Store, opts Options, defs ...workflow.Definition) *Node {
	t.Helper()
	node, err := New(store, opts)
	require.NoError(t, err)
	require.NoError(t, demo.Register(context.Background(), node.engine))
	for _, d := range defs {
		_, err := node.Register(context.Background(), d)
		require.NoError(t, err)
	}
	return node
}

// run runs a node until the test ends, and checks that Run returned without an error.
func run(t *testing.T, node *Node) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- node.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

func start(t *testing.T, node *Node, typ, input string) *persistence.Workflow {
	t.Helper()
	res, err := node.engine.Start(context.Background(), workflow.StartParams{Type: typ, Input: json.RawMessage(input)})
	require.NoError(t, err)
	return res.Workflow
}

func waitStatus(t *testing.T, store *persistence.Store, id int64, status persistence.Status) *persistence.Workflow {
	t.Helper()
	var w *persistence.Workflow
	require.Eventually(t, func() bool {
		var err error
		w, err = store.WorkflowGet(context.Background(), id)
		require.NoError(t, err)
		return w.Status == status
	}, 30*time.Second, 10*time.Millisecond, "workflow %d never became %s", id, status)
	return w
}

func TestNewChecksItsOptions(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, persistence.KindSQLite)
	for name, opts := range map[string]Options{
		"negative expiry":      {Expiry: -time.Second},
		"negative concurrency": {Concurrency: -1},
		"blank group":          {Groups: []string{"a", " "}},
		"group twice":          {Groups: []string{"a", "a"}},
		"negative retention":   {Retention: -time.Hour},
	} {
		_, err := New(store, opts)
		require.Error(t, err, name)
	}
	_, err := New(nil, Options{})
	require.Error(t, err)
	node, err := New(store, Options{})
	require.NoError(t, err)
	require.Len(t, node.pools, 1, "one pool, of the default group")
	node, err = New(store, Options{NoWorkers: true})
	require.NoError(t, err)
	require.Empty(t, node.pools)
}

func TestRunTwiceIsRefused(t *testing.T) {
	t.Parallel()
	node := newNode(t, dbtest.Open(t, persistence.KindSQLite), fastOptions())
	run(t, node)
	require.Eventually(t, func() bool { return node.pools[0].ExecutorID() != 0 }, 10*time.Second, 10*time.Millisecond)
	require.ErrorIs(t, node.Run(context.Background()), ErrRunning)
}

// A node with three groups recovers dead executors' work once per tick, as one executor, not once
// per pool.
func TestNodeWithThreeGroupsRecoversOncePerTick(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		opts := fastOptions()
		opts.Groups = []string{"a", "b", "c"}
		node := newNode(t, store, opts)
		var mu sync.Mutex
		rounds := map[int64]int{} // recovery rounds by the executor they ran as
		node.onRecover = func(executor int64) {
			mu.Lock()
			defer mu.Unlock()
			rounds[executor]++
		}
		run(t, node)
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			total := 0
			for _, n := range rounds {
				total += n
			}
			return total >= 10
		}, 20*time.Second, 10*time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, rounds, 1, "one recovery for the node, not one per pool: %v", rounds)
	})
}
