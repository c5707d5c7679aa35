package pool_test

import (
	"context"
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

// benchStore opens a fresh database of the backend named by CAIRN_BENCH_BACKEND (sqlite default).
func benchStore(b *testing.B) *persistence.Store {
	kind := persistence.KindSQLite
	if os.Getenv("CAIRN_BENCH_BACKEND") == "postgres" {
		kind = persistence.KindPostgres
	}
	store := dbtest.Open(b, kind)
	traceStatements(b, store)
	return store
}

func benchEngine(b *testing.B, store *persistence.Store) *engine.Engine {
	engine := engine.New(store, engine.Options{Logger: testLogger()})
	for _, d := range demoDefs() {
		_, err := engine.Register(context.Background(), d)
		require.NoError(b, err)
	}
	return engine
}

// benchDefinition is the definition BenchmarkDrain runs: CAIRN_BENCH_DEFINITION or bench.noop.
func benchDefinition() string {
	if d := os.Getenv("CAIRN_BENCH_DEFINITION"); d != "" {
		return d
	}
	return "bench.noop"
}

func startNoops(b *testing.B, engine *engine.Engine, n int) { startMany(b, engine, "bench.noop", n) }

func startMany(b *testing.B, engine *engine.Engine, typ string, n int) {
	ps := make([]workflow.StartParams, 0, 1000)
	for i := 0; i < n; i += 1000 {
		ps = ps[:0]
		for j := i; j < min(n, i+1000); j++ {
			ps = append(ps, workflow.StartParams{Type: typ})
		}
		_, err := engine.StartMany(context.Background(), ps)
		require.NoError(b, err)
	}
}

// BenchmarkStartMany measures bulk starts (1,000 per call).
func BenchmarkStartMany(b *testing.B) {
	engine := benchEngine(b, benchStore(b))
	b.ResetTimer()
	startNoops(b, engine, b.N)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "workflows/s")
}

// BenchmarkClaim measures claiming due workflows in batches of 500.
func BenchmarkClaim(b *testing.B) {
	store := benchStore(b)
	engine := benchEngine(b, store)
	startNoops(b, engine, b.N)
	ctx := context.Background()
	e, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "b", PID: 1, Group: "default", Expiry: time.Hour})
	require.NoError(b, err)
	b.ResetTimer()
	for claimed := 0; claimed < b.N; {
		ws, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: e.ID, Group: "default", Limit: 500, Now: persistence.Now(), StepDeadline: persistence.Now().Add(time.Minute), Types: []string{"bench.noop", "t.crash"}})
		require.NoError(b, err)
		claimed += len(ws)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "claims/s")
}

// BenchmarkComplete measures executing and completing claimed bench.noop steps in batches of 500.
func BenchmarkComplete(b *testing.B) {
	store := benchStore(b)
	engine := benchEngine(b, store)
	startNoops(b, engine, b.N)
	ctx := context.Background()
	e, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "b", PID: 1, Group: "default", Expiry: time.Hour})
	require.NoError(b, err)
	var outcomes []*outcome
	for len(outcomes) < b.N {
		ws, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: e.ID, Group: "default", Limit: 500, Now: persistence.Now(), StepDeadline: persistence.Now().Add(time.Minute), Types: []string{"bench.noop", "t.crash"}})
		require.NoError(b, err)
		for _, w := range ws {
			outcomes = append(outcomes, engine.Execute(ctx, executeParams{Workflow: w, ExecutorID: e.ID, Host: "b"}))
		}
	}
	b.ResetTimer()
	for i := 0; i < len(outcomes); i += 500 {
		written, err := engine.Complete(ctx, outcomes[i:min(len(outcomes), i+500)])
		require.NoError(b, err)
		require.Len(b, written, min(len(outcomes), i+500)-i)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "completions/s")
}

// BenchmarkDrain measures the whole pool draining workflows started in bulk (bench.noop, or the
// definition CAIRN_BENCH_DEFINITION names); steps/s counts the workflows' completed steps.
func BenchmarkDrain(b *testing.B) {
	store := benchStore(b)
	engine := benchEngine(b, store)
	startMany(b, engine, benchDefinition(), b.N)
	b.ResetTimer()
	w := pool.New(engine, pool.Options{Concurrency: 8000, PollInterval: 20 * time.Millisecond, Logger: testLogger()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	for w.Stats().Ended.Load() < int64(b.N) {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	cancel()
	require.NoError(b, <-done)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "workflows/s")
	b.ReportMetric(float64(w.Stats().Completed.Load())/b.Elapsed().Seconds(), "steps/s")
}
