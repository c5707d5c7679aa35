package pool_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/cairnflow/cairn/persistence"
)

// statementTimes sums the time spent per kind of statement; benchmarks print it when
// CAIRN_BENCH_TIMING=1, to show where a batch's time goes.
type statementTimes struct {
	mu sync.Mutex
	d  map[string]time.Duration
	n  map[string]int
}

func (h *statementTimes) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (h *statementTimes) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	q := strings.Join(strings.Fields(e.Query), " ")
	if len(q) > 70 {
		q = q[:70]
	}
	h.mu.Lock()
	h.d[q] += time.Since(e.StartTime)
	h.n[q]++
	h.mu.Unlock()
}

func traceStatements(b *testing.B, store *persistence.Store) {
	if os.Getenv("CAIRN_BENCH_TIMING") == "" {
		return
	}
	h := &statementTimes{d: map[string]time.Duration{}, n: map[string]int{}}
	store.DB().AddQueryHook(h) //lint:ignore SA1019 the hook must see the statements of this very DB, not of a copy
	b.Cleanup(func() {
		type row struct {
			q string
			d time.Duration
		}
		var rows []row
		for q, d := range h.d {
			rows = append(rows, row{q, d})
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i].d > rows[j].d })
		for _, r := range rows[:min(12, len(rows))] {
			fmt.Printf("%12v %7d  %s\n", r.d.Round(time.Millisecond), h.n[r.q], r.q)
		}
	})
}
