package graph_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/99designs/gqlgen/client"
	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph"
	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/internal/pool"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow/demo"
)

// node is one cairn node: its own Store, notifier, engine and API on a shared database.
func node(t *testing.T, url string, cfg server.Config) *bundle {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	store, err := persistence.Open(ctx, url, persistence.OpenOptions{MaxConns: 5})
	require.NoError(t, err)
	_, err = store.Migrate(ctx)
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	notifier := persistence.NewNotifier(store, log)
	engine := engine.New(store, engine.Options{Logger: log, Notifier: notifier})
	require.NoError(t, demo.Register(ctx, engine))
	done := make(chan struct{})
	go func() { defer close(done); notifier.Run(ctx) }()
	cfg.Engine, cfg.Logger, cfg.AllowedHosts = engine, log, testHosts
	h := server.New(cfg)
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); cancel(); <-done; _ = store.Close() })
	return &bundle{store: store, engine: engine, handler: h, srv: srv, c: client.New(h, client.Path("/graphql"))}
}

func TestEventsReachASubscriberOnAnotherNode(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t, persistence.KindPostgres)
	a := node(t, url, server.Config{})
	// Node B polls once a minute: only the PostgreSQL notification can bring the event in time.
	b := node(t, url, server.Config{PollInterval: time.Minute})

	ws, _, err := dialWS(t, b, "")
	require.NoError(t, err)
	ws.init()
	ws.subscribe("1", eventsQuery, map[string]any{"filter": map[string]any{"types": []string{"demo.approval"}}})
	// B's subscription starts from now once its resolver has run; start workflows on A until B reports.
	var ev event
	deadline := time.After(20 * time.Second)
	for got := false; !got; {
		var resp map[string]any
		a.must(t, `mutation { startWorkflow(input: {type: "demo.approval"}) { workflow { id } } }`, &resp, nil)
		select {
		case m := <-ws.in:
			require.Equal(t, "next", m.Type, string(m.Payload))
			got = true
			ws.in <- m
		case <-time.After(2 * time.Second):
		case <-deadline:
			t.Fatal("no event crossed nodes")
		}
	}
	ev = ws.nextEvent()
	require.Equal(t, "CREATED", ev.Type)
	require.Equal(t, "demo.approval", ev.Workflow.Type)
}

func TestDemoOrderRunsToTheEndWhileASubscriberWatches(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx, cancel := context.WithCancel(context.Background())
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		notifier := persistence.NewNotifier(store, log)
		engine := engine.New(store, engine.Options{Logger: log, Notifier: notifier})
		require.NoError(t, demo.Register(ctx, engine))
		w := pool.New(engine, pool.Options{PollInterval: 50 * time.Millisecond, Logger: log})
		done := make(chan struct{})
		go func() { defer close(done); go notifier.Run(ctx); _ = w.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		h := server.New(server.Config{Engine: engine, Logger: log, PollInterval: 100 * time.Millisecond, AllowedHosts: testHosts})
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		b := &bundle{store: store, engine: engine, handler: h, srv: srv, c: client.New(h, client.Path("/graphql"))}

		ws, _, err := dialWS(t, b, "")
		require.NoError(t, err)
		ws.init()
		var started struct {
			StartWorkflow struct{ Workflow struct{ ID string } }
		}
		b.must(t, `mutation { startWorkflow(input: {type: "demo.order", input: {failFirstCharge: true}}) { workflow { id } } }`, &started, nil)
		id := started.StartWorkflow.Workflow.ID
		ws.subscribe("1", eventsQuery, map[string]any{"filter": map[string]any{"ids": []string{id}}, "after": graph.EventCursorStart()})
		var states []string
		for {
			ev := ws.nextEvent()
			states = append(states, ev.Type+":"+ev.Status)
			if ev.Status == "FINISHED" {
				break
			}
			require.NotEqual(t, "FAILED", ev.Status, "%v", states)
		}
		require.Equal(t, "CREATED:CREATED", states[0])

		var resp struct {
			Workflow struct {
				Status      string
				State       string
				SideEffects []struct{ Key string }
				Actions     struct {
					TotalCount int
					Nodes      []struct {
						Type           string
						VariablesAfter map[string]any
						TaskInstance   *struct{ Status string }
					}
				}
				TaskInstances struct {
					Nodes []struct {
						Status string
						Error  *string
					}
				}
				Definition struct{ States []struct{ Name, Kind string } }
			}
		}
		b.must(t, `query($id: ID!) { workflow(id: $id) { status state sideEffects { key }
			actions(first: 20) { totalCount nodes { type variablesAfter taskInstance { status } } }
			taskInstances { nodes { status error } } definition { states { name kind } } } }`, &resp, map[string]any{"id": id})
		require.Equal(t, "FINISHED", resp.Workflow.Status)
		require.Equal(t, "done", resp.Workflow.State)
		require.NotEmpty(t, resp.Workflow.SideEffects, "charge records its charge id")
		var failed int
		for _, ti := range resp.Workflow.TaskInstances.Nodes {
			if ti.Status == "FAILED" {
				failed++
			}
		}
		require.Equal(t, 1, failed, "the first charge failed once")
		require.GreaterOrEqual(t, resp.Workflow.Actions.TotalCount, 4)
		require.Len(t, resp.Workflow.Definition.States, 5)
	})
}
