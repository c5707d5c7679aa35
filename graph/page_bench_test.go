package graph_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/99designs/gqlgen/client"
	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// pageQuery is the page a workflow list screen asks for: 100 workflows with their first actions,
// task instances and their executors, the workflow's executor and its definition.
const pageQuery = `{ workflows(first: 100) { totalCount nodes { id status state
	actions(first: 10) { nodes { id type } pageInfo { hasNextPage } }
	taskInstances { nodes { id status executor { host } } }
	executor { id host }
	definition { type version states { name } } } } }`

// BenchmarkWorkflowPage measures one GraphQL request for a page of 100 workflows, each with 12
// actions and a task instance, 30 of them held by an executor, through the real handler on the
// backend CAIRN_BENCH_BACKEND names (sqlite by default, postgres).
func BenchmarkWorkflowPage(b *testing.B) {
	kind := persistence.KindSQLite
	if os.Getenv("CAIRN_BENCH_BACKEND") == "postgres" {
		kind = persistence.KindPostgres
	}
	store := dbtest.Open(b, kind)
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	engine := engine.New(store, engine.Options{Logger: log})
	_, err := engine.Register(ctx, testFlow)
	require.NoError(b, err)

	ps := make([]workflow.StartParams, 100)
	for i := range ps {
		ps[i] = workflow.StartParams{Type: "test.flow", BusinessKey: fmt.Sprintf("bk-%d", i)}
	}
	started, err := engine.StartMany(ctx, ps)
	require.NoError(b, err)
	exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Hour})
	require.NoError(b, err)
	_, err = store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: 30,
		Now: time.Now().Add(time.Hour), StepDeadline: time.Now().Add(time.Hour), Types: []string{"test.flow"}})
	require.NoError(b, err)
	var actions []*persistence.Action
	var tasks []*persistence.TaskInstance
	for _, r := range started {
		for range 12 {
			actions = append(actions, &persistence.Action{WorkflowID: r.Workflow.ID, Type: persistence.ActionStateExecution, State: "start"})
		}
		tasks = append(tasks, &persistence.TaskInstance{WorkflowID: r.Workflow.ID, State: "start", TaskType: "handler", Attempt: 1,
			Status: persistence.TaskSucceeded, ExecutorID: &exec.ID, Host: "h", Started: persistence.Now()})
	}
	require.NoError(b, store.ActionInsertMany(ctx, actions))
	require.NoError(b, store.TaskInstanceInsertMany(ctx, tasks))

	c := client.New(server.New(server.Config{Engine: engine, Logger: log, AllowedHosts: testHosts}), client.Path("/graphql"))
	b.ReportAllocs()
	for b.Loop() {
		var resp map[string]any
		if err := c.Post(pageQuery, &resp); err != nil {
			b.Fatal(err)
		}
		if n := len(resp["workflows"].(map[string]any)["nodes"].([]any)); n != 100 {
			b.Fatalf("page of %d workflows, want 100", n)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
}

// BenchmarkStoredWorkflowPage measures, on a database that already holds workflows (say 1M, from
// `cairn bench --preload 1000000 --keep`), the requests a dashboard makes: the page of 100 with
// totalCount, and workflowStats by status. It reads CAIRN_BENCH_DATABASE_URL and writes nothing;
// without it, it skips.
func BenchmarkStoredWorkflowPage(b *testing.B) {
	url := os.Getenv("CAIRN_BENCH_DATABASE_URL")
	if url == "" {
		b.Skip("set CAIRN_BENCH_DATABASE_URL to a database holding workflows")
	}
	ctx := context.Background()
	store, err := persistence.Open(ctx, url, persistence.OpenOptions{})
	require.NoError(b, err)
	b.Cleanup(func() { store.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c := client.New(server.New(server.Config{Engine: engine.New(store, engine.Options{Logger: log}), Logger: log, AllowedHosts: testHosts}), client.Path("/graphql"))
	for _, q := range []struct{ name, query string }{
		{"page", pageQuery},
		{"stats", `{ workflowStats { total totalIsEstimate byStatus { status count isEstimate } } }`},
	} {
		b.Run(q.name, func(b *testing.B) {
			b.ReportAllocs()
			var ds []time.Duration
			for b.Loop() {
				t0 := time.Now()
				var resp map[string]any
				if err := c.Post(q.query, &resp); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(t0))
			}
			slices.Sort(ds)
			b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
