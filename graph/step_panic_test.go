package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/99designs/gqlgen/client"
	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/internal/pool"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// syncBuffer is a log destination the test reads while the worker writes to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A step that panics fails its attempt, and its stack (source paths, goroutines) and panic value
// stay in the node's log: the API shows only a short Problem naming the incident, and the log line
// with the stack carries the same incident ID.
func TestStepPanicShowsAnIncidentNotAStack(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx, cancel := context.WithCancel(context.Background())
		logs := &syncBuffer{}
		log := slog.New(slog.NewJSONHandler(logs, nil))
		engine := engine.New(store, engine.Options{Logger: log})
		_, err := engine.Register(ctx, workflow.Definition{Type: "t.panic", States: []workflow.State{
			{Name: "boom", Kind: workflow.Start, Next: []string{"done"}, Retry: &workflow.RetryPolicy{MaxAttempts: 2, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond},
				Handler: func(workflow.StepContext) (workflow.Next, error) {
					panic("could not connect with password=hunter2")
				}},
			{Name: "done", Kind: workflow.End},
			{Name: "failed", Kind: workflow.ErrorKind},
		}})
		require.NoError(t, err)
		w := pool.New(engine, pool.Options{PollInterval: 20 * time.Millisecond, Logger: log})
		done := make(chan struct{})
		go func() { defer close(done); _ = w.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		h := server.New(server.Config{Engine: engine, Logger: log, AllowedHosts: testHosts})
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		b := &bundle{store: store, engine: engine, handler: h, srv: srv, c: client.New(h, client.Path("/graphql"))}

		var started struct {
			StartWorkflow struct{ Workflow struct{ ID string } }
		}
		b.must(t, `mutation { startWorkflow(input: {type: "t.panic"}) { workflow { id } } }`, &started, nil)
		id := started.StartWorkflow.Workflow.ID
		query := `query($id: ID!) { workflow(id: $id) { status state stateText lastError
			actions { nodes { type stateText } } taskInstances { nodes { status attempt error } } } }`
		var got struct {
			Workflow struct {
				Status, State string
				StateText     *string
				LastError     *string
				Actions       struct {
					Nodes []struct{ Type, StateText string }
				}
				TaskInstances struct {
					Nodes []struct {
						Status  string
						Attempt int
						Error   *string
					}
				}
			}
		}
		deadline := time.Now().Add(time.Minute)
		for {
			b.must(t, query, &got, map[string]any{"id": id})
			if got.Workflow.Status == "FAILED" || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		require.Equal(t, "FAILED", got.Workflow.Status)
		require.Equal(t, "failed", got.Workflow.State)

		_, raw := b.post(t, query, map[string]any{"id": id})
		for _, leak := range []string{"goroutine", ".go:", "hunter2", "panic("} {
			require.NotContains(t, string(raw.Data), leak, "the API shows a stack or panic value")
		}
		stored, err := store.TaskInstanceList(ctx, persistence.TaskInstanceListParams{WorkflowIDs: []int64{mustRowID(t, store)}})
		require.NoError(t, err)
		for _, ti := range stored {
			require.NotContains(t, *ti.Error, "goroutine")
			require.NotContains(t, *ti.Error, ".go:")
		}

		// Each failed attempt names its own incident, as a Problem; the workflow and its last
		// action show the last one.
		incidentRE := regexp.MustCompile(`incident ([0-9a-f]{16})`)
		tis := got.Workflow.TaskInstances.Nodes
		require.Len(t, tis, 2)
		var incidents []string
		for _, ti := range tis {
			require.Equal(t, "FAILED", ti.Status)
			require.NotNil(t, ti.Error)
			var p workflow.Problem
			require.NoError(t, json.Unmarshal([]byte(*ti.Error), &p), *ti.Error)
			require.Equal(t, "internal error", p.Title)
			m := incidentRE.FindStringSubmatch(p.Detail)
			require.NotNil(t, m, p.Detail)
			incidents = append(incidents, m[1])
		}
		require.NotEqual(t, incidents[0], incidents[1])
		require.Equal(t, *tis[1].Error, *got.Workflow.LastError)
		require.Equal(t, "internal error: incident "+incidents[1]+": see the node's log", *got.Workflow.StateText)
		actions := got.Workflow.Actions.Nodes
		require.Equal(t, *got.Workflow.StateText, actions[len(actions)-1].StateText)

		// The node's log has the stack and the panic, under the same incident IDs.
		for _, incident := range incidents {
			var line map[string]any
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, incident) {
					require.NoError(t, json.Unmarshal([]byte(l), &line))
					break
				}
			}
			require.NotNil(t, line, "no log line names incident %s", incident)
			require.Equal(t, incident, line["incident"])
			require.Contains(t, line["stack"], "goroutine")
			require.Contains(t, line["stack"], "step_panic_test.go:")
			require.Contains(t, line["panic"], "password=hunter2")
		}
	})
}

// mustRowID is the row ID of the only workflow in the store.
func mustRowID(t *testing.T, store *persistence.Store) int64 {
	t.Helper()
	ws, _, err := store.WorkflowList(context.Background(), persistence.WorkflowListParams{Limit: 2})
	require.NoError(t, err)
	require.Len(t, ws, 1)
	return ws[0].ID
}
