package remoteworker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn"
	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/remoteworker"
	"github.com/cairnflow/cairn/workflow"
)

// poolConcurrency is how many steps a test node runs at once.
var poolConcurrency = 20

// quoteDef calls the remote function "quote" and keeps its output.
var quoteDef = workflow.Definition{Type: "remote.quote", States: []workflow.State{
	{Name: "call", Kind: workflow.Start, Next: []string{"done"}, Handler: func(c workflow.StepContext) (workflow.Next, error) {
		var in any
		if err := c.Input(&in); err != nil {
			return workflow.Next{}, err
		}
		out, err := c.CallRemote("quote", in)
		if err != nil {
			return workflow.Next{}, err
		}
		if err := c.SetVar("quote", json.RawMessage(out)); err != nil {
			return workflow.Next{}, err
		}
		return workflow.MoveTo("done"), nil
	}},
	{Name: "done", Kind: workflow.End},
}}

// node is one cairn node of a test (cairn.New and Run: its worker pool and services) with its
// GraphQL server, until the test ends.
type node struct {
	engine *cairn.Node
	url    string
}

func startNode(t testing.TB, store *persistence.Store) *node {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	n, err := cairn.New(store, cairn.Options{Logger: log, Concurrency: poolConcurrency, PollInterval: 50 * time.Millisecond,
		HeartbeatInterval: 200 * time.Millisecond, Expiry: 5 * time.Second, DrainTimeout: 5 * time.Second})
	require.NoError(t, err)
	_, err = n.Register(context.Background(), quoteDef)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	srv := httptest.NewServer(n.Handler(server.Config{Logger: log}))
	t.Cleanup(func() {
		cancel() // the node's long polls answer before the server closes
		srv.Close()
		require.NoError(t, <-done)
	})
	return &node{engine: n, url: srv.URL + "/graphql"}
}

func (n *node) start(t testing.TB, input string) int64 {
	t.Helper()
	res, err := n.engine.Start(context.Background(), workflow.StartParams{Type: quoteDef.Type, Input: json.RawMessage(input)})
	require.NoError(t, err)
	return res.Workflow.ID
}

func waitStatus(t *testing.T, store *persistence.Store, id int64, status persistence.Status) *persistence.Workflow {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		w, err := store.WorkflowGet(context.Background(), id)
		require.NoError(t, err)
		if w.Status == status {
			return w
		}
		require.True(t, time.Now().Before(deadline), "workflow %d is %s, not %s (%v)", id, w.Status, status, w.LastError)
		time.Sleep(10 * time.Millisecond)
	}
}

// Run serves a function's tasks with a Go handler: outputs complete them, a *Failure fails them.
func TestRunServesTasks(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := startNode(t, store)
		c := remoteworker.New(n.url, remoteworker.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() {
			ran <- c.Run(ctx, remoteworker.RunOptions{Worker: "go-1", Concurrency: 3, WaitMs: 500, Functions: map[string]remoteworker.Handler{
				"quote": func(_ context.Context, task remoteworker.Task) (any, error) {
					var in struct{ Qty int }
					if err := json.Unmarshal(task.Input, &in); err != nil {
						return nil, err
					}
					if in.Qty < 0 {
						return nil, &remoteworker.Failure{Status: 422, Title: "Bad Quantity", Detail: fmt.Sprint(in.Qty)}
					}
					return map[string]int{"total": in.Qty * 5}, nil
				},
			}})
		}()
		var ids []int64
		for i := 1; i <= 10; i++ {
			ids = append(ids, n.start(t, fmt.Sprintf(`{"qty": %d}`, i)))
		}
		bad := n.start(t, `{"qty": -1}`)
		for i, id := range ids {
			w := waitStatus(t, store, id, persistence.StatusFinished)
			var vars map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(w.Variables, &vars))
			require.JSONEq(t, fmt.Sprintf(`{"total": %d}`, (i+1)*5), string(vars["quote"]))
		}
		w := waitStatus(t, store, bad, persistence.StatusManual)
		require.Contains(t, *w.LastError, "Bad Quantity")
		cancel()
		require.ErrorIs(t, <-ran, context.Canceled)
	})
}

// The client's calls answer with coded errors: a stale token is CONFLICT.
func TestClientErrors(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, persistence.KindSQLite)
	n := startNode(t, store)
	c := remoteworker.New(n.url, remoteworker.Options{})
	ctx := context.Background()
	_, err := c.Poll(ctx, remoteworker.PollParams{Functions: []string{"quote"}, Max: 500})
	var e *remoteworker.Error
	require.True(t, errors.As(err, &e), "%v", err)
	require.Equal(t, "INVALID_INPUT", e.Code)
	require.Equal(t, "max", e.Field)

	n.start(t, `{"qty": 1}`)
	var tasks []remoteworker.Task
	for len(tasks) == 0 {
		tasks, err = c.Poll(ctx, remoteworker.PollParams{Functions: []string{"quote"}, WaitMs: 1000})
		require.NoError(t, err)
	}
	d, err := c.Heartbeat(ctx, tasks[0].Token)
	require.NoError(t, err)
	require.True(t, d.After(time.Now()))
	require.NoError(t, c.Complete(ctx, tasks[0].Token, map[string]int{"total": 5}))
	err = c.Complete(ctx, tasks[0].Token, map[string]int{"total": 6})
	require.True(t, remoteworker.IsConflict(err), "%v", err)
}

// Run sends its handlers' outputs with completeTasks, those that are ready together in one
// request, never one completeTask per task.
func TestRunCompletesInBatches(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, persistence.KindSQLite)
	n := startNode(t, store)
	var mu sync.Mutex
	calls := map[string]int{}
	target, err := url.Parse(n.url)
	require.NoError(t, err)
	path := target.Path
	target.Path = ""
	proxy := httputil.NewSingleHostReverseProxy(target)
	counting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		mu.Lock()
		for _, op := range []string{"completeTasks(", "completeTask("} {
			if bytes.Contains(body, []byte(op)) {
				calls[op]++
				break
			}
		}
		mu.Unlock()
		r.URL.Path = path
		proxy.ServeHTTP(w, r)
	}))
	defer counting.Close()
	c := remoteworker.New(counting.URL, remoteworker.Options{})
	var ids []int64
	for i := 1; i <= 20; i++ {
		ids = append(ids, n.start(t, fmt.Sprintf(`{"qty": %d}`, i)))
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() {
		ran <- c.Run(ctx, remoteworker.RunOptions{Worker: "batch", Concurrency: 20, WaitMs: 500, Functions: map[string]remoteworker.Handler{
			"quote": func(context.Context, remoteworker.Task) (any, error) { return map[string]int{"total": 1}, nil },
		}})
	}()
	for _, id := range ids {
		waitStatus(t, store, id, persistence.StatusFinished)
	}
	cancel()
	require.ErrorIs(t, <-ran, context.Canceled)
	mu.Lock()
	defer mu.Unlock()
	require.Zero(t, calls["completeTask("], "Run completed a task on its own")
	require.NotZero(t, calls["completeTasks("])
	require.LessOrEqual(t, calls["completeTasks("], 20)
}

// CompleteMany ends many tasks in one request: a stale token is its own result's CONFLICT, and bad
// input refuses the whole call with the field of the result at fault.
func TestClientCompleteMany(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, persistence.KindSQLite)
	n := startNode(t, store)
	c := remoteworker.New(n.url, remoteworker.Options{})
	ctx := context.Background()
	ids := []int64{n.start(t, `{"qty": 1}`), n.start(t, `{"qty": 2}`)}
	var tasks []remoteworker.Task
	for len(tasks) < 2 {
		got, err := c.Poll(ctx, remoteworker.PollParams{Functions: []string{"quote"}, Max: 2, WaitMs: 1000})
		require.NoError(t, err)
		tasks = append(tasks, got...)
	}
	_, err := c.CompleteMany(ctx, []remoteworker.Result{{Token: tasks[0].Token, Output: 1}, {Token: "nonsense", Output: 2}})
	var e *remoteworker.Error
	require.True(t, errors.As(err, &e), "%v", err)
	require.Equal(t, "INVALID_INPUT", e.Code)
	require.Equal(t, "results[1].token", e.Field)

	errs, err := c.CompleteMany(ctx, []remoteworker.Result{{Token: tasks[0].Token, Output: map[string]int{"total": 5}}})
	require.NoError(t, err)
	require.Equal(t, []error{nil}, errs)
	errs, err = c.CompleteMany(ctx, []remoteworker.Result{{Token: tasks[0].Token, Output: 6}, {Token: tasks[1].Token, Output: map[string]int{"total": 7}}})
	require.NoError(t, err)
	require.Len(t, errs, 2)
	require.True(t, remoteworker.IsConflict(errs[0]), "%v", errs[0])
	require.NoError(t, errs[1])
	for _, id := range ids {
		waitStatus(t, store, id, persistence.StatusFinished)
	}
}

// A poller waiting on node A gets a task created through node B at once: B's commit reaches A
// through PostgreSQL NOTIFY, not A's once-a-second look.
func TestPollerOnOneNodeGetsTaskCreatedOnAnother(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t, persistence.KindPostgres)
	open := func() *persistence.Store {
		s, err := persistence.Open(context.Background(), url, persistence.OpenOptions{MaxConns: 5})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		_, err = s.Migrate(context.Background())
		require.NoError(t, err)
		return s
	}
	storeA, storeB := open(), open()
	a := startNode(t, storeA)
	b := startNode(t, storeB)
	c := remoteworker.New(a.url, remoteworker.Options{})
	ctx := context.Background()
	// A poll's first look finds nothing; without a wake-up its next look comes a second later.
	// A round is conclusive when node B created the task within that second: the poll must then
	// have answered before the second was up, woken through PostgreSQL NOTIFY. Round 0 warms up
	// (node A's LISTEN connection and node B's pool start in the background).
	conclusive := 0
	for round := 0; conclusive < 3; round++ {
		require.Less(t, round, 15, "too few conclusive rounds: node B was too slow to create its tasks")
		type answer struct {
			task remoteworker.Task
			at   time.Time
		}
		got := make(chan answer, 1)
		begun := time.Now()
		go func() {
			tasks, err := c.Poll(ctx, remoteworker.PollParams{Functions: []string{"quote"}, WaitMs: 10000, Worker: "on-a"})
			if err != nil || len(tasks) != 1 {
				t.Errorf("poll: %v, %d tasks", err, len(tasks))
				got <- answer{}
				return
			}
			got <- answer{task: tasks[0], at: time.Now()}
		}()
		time.Sleep(200 * time.Millisecond)
		id := b.start(t, `{"qty": 2}`)
		var a answer
		select {
		case a = <-got:
		case <-time.After(15 * time.Second):
			t.Fatal("the poll on node A never returned")
		}
		require.NotEmpty(t, a.task.Token)
		task, err := storeA.RemoteTaskCurrent(ctx, id)
		require.NoError(t, err)
		if round > 0 && task.Created.Before(begun.Add(900*time.Millisecond)) {
			conclusive++
			require.True(t, a.at.Before(begun.Add(time.Second)),
				"the poller on node A was not woken by the task created through node B (created %s, answered %s after the poll began)",
				task.Created.Sub(begun), a.at.Sub(begun))
		}
		require.NoError(t, c.Complete(ctx, a.task.Token, map[string]int{"total": 10}))
		waitStatus(t, storeB, id, persistence.StatusFinished)
	}
}
