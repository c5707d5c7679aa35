package graph

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph/model"
	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// BenchmarkLiveFanOut starts workflows from 8 goroutines, as fast as they go or 250 a second, one
// in 50 of a watched type, while 0 or 1,000 subscriptions follow workflowEvents filtered to that
// type, on each backend. It reports
// the start rate (compare the two runs: the subscribers should barely slow the node), and for the
// subscribers the delay from an event's commit to its arrival (p50, p99) and how many were cut
// off. Run: go test -run '^$' -bench LiveFanOut -benchtime 2000x ./graph
// (with TEST_DATABASE_URL for PostgreSQL; CAIRN_BENCH_SUBSCRIBERS=0,10000 for other counts).
func BenchmarkLiveFanOut(b *testing.B) {
	counts := BenchInts(b, "CAIRN_BENCH_SUBSCRIBERS", 0, 1000)
	for _, kind := range dbtest.Backends {
		for _, rate := range []int{0, 250} {
			for _, subscribers := range counts {
				name := fmt.Sprintf("%s/unpaced/subscribers=%d", kind, subscribers)
				if rate > 0 {
					name = fmt.Sprintf("%s/%d-per-s/subscribers=%d", kind, rate, subscribers)
				}
				b.Run(name, func(b *testing.B) {
					benchFanOut(b, dbtest.Open(b, kind), subscribers, rate)
				})
			}
		}
	}
}

// benchFanOut starts b.N workflows, at most rate a second (0: as fast as they go).
func benchFanOut(b *testing.B, store *persistence.Store, subscribers, rate int) {
	engine, r := liveSetup(b, store, 256)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu       sync.Mutex
		delays   []time.Duration
		cutOff   atomic.Int64
		received atomic.Int64
		watchers sync.WaitGroup
	)
	for range subscribers {
		ch, err := r.workflowEvents(ctx, &model.WorkflowFilter{Types: []string{"test.other"}}, nil)
		require.NoError(b, err)
		watchers.Add(1)
		go func() {
			defer watchers.Done()
			var mine []time.Duration
			for ev := range ch {
				if ev.Failed() {
					cutOff.Add(1)
					continue
				}
				at, _ := ev.At()
				mine = append(mine, time.Since(at))
				received.Add(1)
			}
			mu.Lock()
			delays = append(delays, mine...)
			mu.Unlock()
		}()
	}

	b.ResetTimer()
	elapsed, err := RunFanOutStarts(ctx, engine, b.N, rate)
	require.NoError(b, err)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "starts/s")
	if subscribers == 0 {
		return
	}
	// Let the last events arrive (bounded), then end the subscriptions.
	want := int64(subscribers * (b.N / 50))
	for deadline := time.Now().Add(30 * time.Second); received.Load()+cutOff.Load() < want && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	watchers.Wait()
	if len(delays) == 0 {
		return
	}
	slices.Sort(delays)
	b.ReportMetric(float64(delays[len(delays)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(delays[len(delays)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(len(delays))/float64(want), "delivered")
	b.ReportMetric(float64(cutOff.Load()), "cut-off")
}

// RunFanOutStarts starts n workflows from 8 goroutines, at most rate a second (0: as fast as they
// go), one in 50 of type test.other and the rest test.noop, and returns how long it took.
func RunFanOutStarts(ctx context.Context, engine *engine.Engine, n, rate int) (time.Duration, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var pace <-chan time.Time
	if rate > 0 {
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		pace = tick.C
	}
	errs := make(chan error, 8)
	start := time.Now()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				if pace != nil {
					<-pace
				}
				typ := "test.noop"
				if i%50 == 0 {
					typ = "test.other"
				}
				if _, err := engine.Start(ctx, workflow.StartParams{Type: typ}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	return elapsed, <-errs
}

// RegisterFanOutTypes registers test.noop and test.other, the types RunFanOutStarts starts.
func RegisterFanOutTypes(t testing.TB, engine *engine.Engine) {
	for _, typ := range []string{"test.noop", "test.other"} {
		def := noopFlow
		def.Type = typ
		_, err := engine.Register(context.Background(), def)
		require.NoError(t, err)
	}
}

// BenchInts reads the comma-separated numbers of the environment variable name, or returns def
// when it is not set.
func BenchInts(b testing.TB, name string, def ...int) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, c := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		require.NoError(b, err, name)
		out = append(out, n)
	}
	return out
}
