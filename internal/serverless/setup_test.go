package serverless_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/internal/pool"
	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// node is one cairn node of a test: an engine that runs Serverless Workflow documents.
type node struct {
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

// newNode returns an engine on store with the compiler installed and its listeners running until
// the test ends.
func newNode(t *testing.T, store *persistence.Store) *node {
	t.Helper()
	return newNodeWith(t, store, serverless.Options{})
}

// newNodeWith is newNode with the compiler's options.
func newNodeWith(t *testing.T, store *persistence.Store, opts serverless.Options) *node {
	t.Helper()
	return newNodeLimited(t, store, workflow.Limits{}, opts)
}

// newNodeLimited is newNodeWith on an engine with limits.
func newNodeLimited(t *testing.T, store *persistence.Store, limits workflow.Limits, opts serverless.Options) *node {
	t.Helper()
	log := testLogger()
	notifier := persistence.NewNotifier(store, log)
	engine := engine.New(store, engine.Options{Logger: log, Notifier: notifier, Limits: limits})
	serverless.Install(engine, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		go engine.RunCancelListener(ctx)
		notifier.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return &node{store: store, engine: engine}
}

// startWorker runs a worker on the node; the returned func stops it (also called when the test ends).
func (n *node) startWorker(t *testing.T) (stop func()) {
	t.Helper()
	w := pool.New(n.engine, pool.Options{Concurrency: 10, PollInterval: 50 * time.Millisecond, HeartbeatInterval: 500 * time.Millisecond,
		Expiry: 5 * time.Second, DrainTimeout: 5 * time.Second, Logger: testLogger()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		require.NoError(t, <-done)
	}
	t.Cleanup(stop)
	return stop
}

func (n *node) deploy(t *testing.T, source string) *persistence.Definition {
	t.Helper()
	res, err := n.engine.Deploy(context.Background(), source, "")
	require.NoError(t, err)
	return res.Definition
}

func (n *node) start(t *testing.T, typ, input string) *persistence.Workflow {
	t.Helper()
	res, err := n.engine.Start(context.Background(), workflow.StartParams{Type: typ, Input: json.RawMessage(input)})
	require.NoError(t, err)
	return res.Workflow
}

// waitEnded polls a workflow until it is FINISHED or FAILED (or MANUAL: a stuck step), failing
// the test after a generous deadline.
func (n *node) waitEnded(t *testing.T, id int64) *persistence.Workflow {
	t.Helper()
	return n.waitFor(t, id, "ended", func(w *persistence.Workflow) bool {
		return w.Status == persistence.StatusFinished || w.Status == persistence.StatusFailed || w.Status == persistence.StatusManual
	})
}

func (n *node) waitFor(t *testing.T, id int64, what string, cond func(*persistence.Workflow) bool) *persistence.Workflow {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		w, err := n.store.WorkflowGet(context.Background(), id)
		require.NoError(t, err)
		if cond(w) {
			return w
		}
		if time.Now().After(deadline) {
			t.Fatalf("workflow %d never %s: status %s state %s", id, what, w.Status, w.State)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// output is a finished workflow's output.
func output(t *testing.T, w *persistence.Workflow) any {
	t.Helper()
	var vars map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(w.Variables, &vars))
	var out any
	if raw, ok := vars["output"]; ok {
		require.NoError(t, json.Unmarshal(raw, &out))
	}
	return out
}

// statesRun lists the states a workflow ran, in order, from its history.
func statesRun(t *testing.T, store *persistence.Store, id int64) []string {
	t.Helper()
	as, err := store.ActionList(context.Background(), persistence.ActionListParams{WorkflowIDs: []int64{id}})
	require.NoError(t, err)
	var out []string
	for _, a := range as {
		if a.FromState != nil && (len(out) == 0 || out[len(out)-1] != *a.FromState || a.Type == persistence.ActionStateExecution) {
			out = append(out, *a.FromState)
		}
	}
	return out
}

func lastError(w *persistence.Workflow) string {
	if w.LastError == nil {
		return ""
	}
	return *w.LastError
}
