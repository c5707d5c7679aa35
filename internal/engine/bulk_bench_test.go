package engine_test

import (
	"context"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// BenchmarkBulkCancel cancels BULK_BENCH_N workflows (default 10,000) through a bulk operation on
// each backend, in batches of BULK_BENCH_BATCH (default: the runner's), while a client keeps starting workflows 100 at a time. It
// reports the targets cancelled per second and the client's start rate during the operation as a
// share of its rate alone (start_ratio). One run of the operation per backend, whatever b.N is:
//
//	go test ./internal/engine -run '^$' -bench BulkCancel -benchtime 1x
func BenchmarkBulkCancel(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("BULK_BENCH_N")); err == nil && v > 0 {
		n = v
	}
	batch := engine.DefaultBulkBatch
	if v, err := strconv.Atoi(os.Getenv("BULK_BENCH_BATCH")); err == nil && v > 0 {
		batch = v
	}
	for _, kind := range dbtest.Backends {
		b.Run(string(kind), func(b *testing.B) {
			ctx := context.Background()
			e := newEngine(b, dbtest.Open(b, kind))
			key := "bench-bulk"
			for left := n; left > 0; left -= 1000 {
				ps := make([]workflow.StartParams, min(left, 1000))
				for i := range ps {
					ps[i] = workflow.StartParams{Type: "demo.order", BusinessKey: key}
				}
				if _, err := e.StartMany(ctx, ps); err != nil {
					b.Fatal(err)
				}
			}
			alone := startRate(b, e, nil)
			op, err := e.StartBulk(ctx, workflow.BulkParams{Action: workflow.BulkCancel, Filter: persistence.WorkflowFilter{BusinessKey: &key}})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			done := make(chan struct{})
			var during float64
			go func() {
				during = startRate(b, e, done)
				close(done)
			}()
			began := time.Now()
			processed, err := e.RunBulk(ctx, engine.BulkRunOptions{Owner: "bench", Batch: batch})
			took := time.Since(began)
			done <- struct{}{}
			<-done
			b.StopTimer()
			if err != nil || processed != n {
				b.Fatalf("processed %d of %d: %v", processed, n, err)
			}
			if op, err = e.BulkOperation(ctx, op.ID); err != nil || op.Succeeded != int64(n) {
				b.Fatalf("operation %+v: %v", op, err)
			}
			b.ReportMetric(float64(n)/took.Seconds(), "cancelled/s")
			b.ReportMetric(during/alone, "start_ratio")
		})
	}
}

// startRate starts workflows 100 at a time, for two seconds (stop nil) or until stop receives, and
// returns how many it started per second.
func startRate(b *testing.B, e *engine.Engine, stop chan struct{}) float64 {
	var started atomic.Int64
	began := time.Now()
	var timeout <-chan time.Time
	if stop == nil {
		timeout = time.After(2 * time.Second)
	}
	ps := make([]workflow.StartParams, 100)
	for i := range ps {
		ps[i] = workflow.StartParams{Type: "demo.order", BusinessKey: "bench-other"}
	}
	for {
		select {
		case <-stop:
			return float64(started.Load()) / time.Since(began).Seconds()
		case <-timeout:
			return float64(started.Load()) / time.Since(began).Seconds()
		default:
		}
		if _, err := e.StartMany(context.Background(), ps); err != nil {
			b.Error(err)
			return 0
		}
		started.Add(int64(len(ps)))
	}
}

// BenchmarkBulkDryRun times a dry run of a bulk cancel whose filter (a type) matches every one of
// BULK_BENCH_N stored workflows (default 100,000), on each backend:
//
//	BULK_BENCH_N=1000000 go test ./internal/engine -run '^$' -bench BulkDryRun -benchtime 3x
func BenchmarkBulkDryRun(b *testing.B) {
	n := 100000
	if v, err := strconv.Atoi(os.Getenv("BULK_BENCH_N")); err == nil && v > 0 {
		n = v
	}
	for _, kind := range dbtest.Backends {
		b.Run(string(kind), func(b *testing.B) {
			ctx := context.Background()
			store := dbtest.Open(b, kind)
			e := newEngine(b, store)
			for left := n; left > 0; left -= 5000 {
				ps := make([]workflow.StartParams, min(left, 5000))
				for i := range ps {
					ps[i] = workflow.StartParams{Type: "demo.order"}
				}
				if _, err := e.StartMany(ctx, ps); err != nil {
					b.Fatal(err)
				}
			}
			if err := store.Analyze(ctx); err != nil {
				b.Fatal(err)
			}
			typ := "demo.order"
			b.ResetTimer()
			for range b.N {
				op, err := e.StartBulk(ctx, workflow.BulkParams{Action: workflow.BulkCancel, DryRun: true,
					Filter: persistence.WorkflowFilter{Types: []string{typ}}})
				if err != nil || op.Total != int64(n) || op.WouldChange != int64(n) {
					b.Fatalf("dry run %+v: %v", op, err)
				}
			}
		})
	}
}
