package persistence_test

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// pendingTasks creates n pending tasks of fn, each of a workflow of its own, oldest first.
func pendingTasks(t testing.TB, store *persistence.Store, fn string, n int) []*persistence.RemoteTask {
	t.Helper()
	ctx := context.Background()
	var out []*persistence.RemoteTask
	for len(out) < n {
		wfs := make([]*persistence.Workflow, min(1000, n-len(out)))
		for i := range wfs {
			wfs[i] = newWorkflow("t.lease", persistence.StatusWaiting, nil)
		}
		require.NoError(t, store.WorkflowInsertMany(ctx, wfs))
		tasks := make([]*persistence.RemoteTask, len(wfs))
		for i, w := range wfs {
			tasks[i] = &persistence.RemoteTask{Function: fn, WorkflowID: w.ID, State: "s", ExecutorGroup: "default",
				Input: json.RawMessage(`{}`), MaxAttempts: 3}
		}
		require.NoError(t, store.RemoteTaskCreateMany(ctx, tasks))
		out = append(out, tasks...)
	}
	return out
}

func lease(t *testing.T, store *persistence.Store, limit int, fns ...string) []*persistence.RemoteTask {
	t.Helper()
	out, err := store.RemoteTaskLease(context.Background(), persistence.RemoteTaskLeaseParams{Functions: fns, Limit: limit,
		Token: "t", Lease: time.Minute, Worker: "w", Now: persistence.Now()})
	require.NoError(t, err)
	return out
}

// A lease of several functions takes the oldest pending tasks of them all, on every backend.
func TestRemoteTaskLeaseTakesTheOldestOfItsFunctions(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		f := pendingTasks(t, store, "f", 3)
		g := pendingTasks(t, store, "g", 2)
		f = append(f, pendingTasks(t, store, "f", 2)...)
		got := lease(t, store, 4, "g", "f", "none")
		ids := make([]int64, len(got))
		for i, task := range got {
			ids[i] = task.ID
		}
		require.Equal(t, []int64{f[0].ID, f[1].ID, f[2].ID, g[0].ID}, ids)
		got = lease(t, store, 10, "f", "g")
		require.Len(t, got, 3)
		require.Equal(t, []int64{g[1].ID, f[3].ID, f[4].ID}, []int64{got[0].ID, got[1].ID, got[2].ID})
	})
}

// With half of a burst of tasks leased, and the statistics taken while it was all pending, a lease
// on PostgreSQL reads the pending tasks it takes, not every task leased before them: read by ID, it
// was planned as a walk of the primary key from the first task (5,000 rows for a lease of 100 here,
// 50,000 halfway through 100,000).
func TestRemoteTaskLeaseReadsOnlyPendingTasks(t *testing.T) {
	t.Parallel()
	dbtest.ForKinds(t, []persistence.Kind{persistence.KindPostgres}, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		pendingTasks(t, store, "f", 10000)
		pendingTasks(t, store, "g", 10)
		_, err := store.DB().ExecContext(ctx, "ANALYZE remote_tasks")
		require.NoError(t, err)
		for range 50 {
			require.Len(t, lease(t, store, 100, "f"), 100)
		}
		type counters struct {
			SeqScans int64 `bun:"seq_scan"`
			Rows     int64 `bun:"rows"`
		}
		read := func(tx bun.Tx) (c counters) {
			require.NoError(t, tx.NewRaw(`SELECT seq_scan, seq_tup_read + idx_tup_fetch AS rows FROM pg_stat_xact_user_tables
				WHERE relid = 'remote_tasks'::regclass`).Scan(ctx, &c))
			return c
		}
		for _, fns := range [][]string{{"f"}, {"f", "g"}} {
			tx, err := store.DB().BeginTx(ctx, nil)
			require.NoError(t, err)
			before := read(tx)
			got, err := persistence.StoreOnForTest(store, tx).RemoteTaskLease(ctx, persistence.RemoteTaskLeaseParams{Functions: fns,
				Limit: 100, Token: "t", Lease: time.Minute, Worker: "w", Now: persistence.Now()})
			require.NoError(t, err)
			require.Len(t, got, 100)
			after := read(tx)
			require.NoError(t, tx.Rollback())
			require.Equal(t, before.SeqScans, after.SeqScans, "%v: no scan of the table", fns)
			require.Less(t, after.Rows-before.Rows, int64(1000), "%v: rows read for a lease of 100", fns)
		}
	})
}

// On SQLite, a lease of several functions reads each function's oldest pending tasks from
// remote_tasks_pending_idx; after ANALYZE, the read of all of them in ID order scanned the table.
func TestRemoteTaskLeaseReadsEachFunctionsIndexOnSQLite(t *testing.T) {
	t.Parallel()
	dbtest.ForKinds(t, []persistence.Kind{persistence.KindSQLite}, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		pendingTasks(t, store, "f", 2000)
		pendingTasks(t, store, "g", 10)
		for range 10 {
			require.Len(t, lease(t, store, 100, "f"), 100)
		}
		_, err := store.DB().ExecContext(ctx, "ANALYZE")
		require.NoError(t, err)
		q, args := persistence.SQLiteLeaseQueryForTest([]string{"f", "g"}, 100)
		var plan []string
		for _, row := range explainRows(t, store, q, args...) {
			plan = append(plan, row["detail"])
		}
		joined := strings.Join(plan, "\n")
		require.NotContains(t, joined, "SCAN remote_tasks", joined)
		require.Equal(t, 2, strings.Count(joined, "INDEX remote_tasks_pending_idx (function=?)"), joined)
	})
}

// BenchmarkRemoteTaskLeaseBurst leases a burst of pending tasks (CAIRN_BENCH_TASKS, 100,000 by
// default) of one function in leases of 100, each its own transaction, after ANALYZE took the
// statistics of the burst all pending: the time a lease takes, averaged over the whole burst.
//
//	TEST_DATABASE_URL=... go test ./persistence -run '^$' -bench RemoteTaskLeaseBurst -benchtime 1x
func BenchmarkRemoteTaskLeaseBurst(b *testing.B) {
	kind := persistence.KindPostgres
	if k := os.Getenv("CAIRN_BENCH_BACKEND"); k != "" {
		kind = persistence.Kind(k)
	}
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("CAIRN_BENCH_TASKS")); err == nil && v > 0 {
		n = v
	}
	store := dbtest.Open(b, kind)
	ctx := context.Background()
	var leases int
	var took time.Duration
	for range b.N {
		b.StopTimer()
		pendingTasks(b, store, "f", n)
		if err := store.Analyze(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		began := time.Now()
		for left := n; left > 0; leases++ {
			got, err := store.RemoteTaskLease(ctx, persistence.RemoteTaskLeaseParams{Functions: []string{"f"}, Limit: 100,
				Token: "t", Lease: time.Hour, Worker: "w", Now: persistence.Now()})
			if err != nil || len(got) == 0 {
				b.Fatalf("lease: %d tasks, %v", len(got), err)
			}
			left -= len(got)
		}
		took += time.Since(began)
	}
	b.ReportMetric(float64(took.Microseconds())/1000/float64(leases), "ms/lease")
	b.ReportMetric(float64(n*b.N)/took.Seconds(), "tasks/s")
}

// On MariaDB, a lease of several functions reads each function's oldest pending tasks in ID order
// from remote_tasks_pending_idx, not every pending task of them all: read as one range of the
// functions, each lease read and sorted all of them (5,000 here).
func TestRemoteTaskLeaseReadsEachFunctionsOldestOnMariaDB(t *testing.T) {
	t.Parallel()
	dbtest.ForKinds(t, []persistence.Kind{persistence.KindMySQL}, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		pendingTasks(t, store, "f", 10000)
		pendingTasks(t, store, "g", 10)
		for range 50 {
			require.Len(t, lease(t, store, 100, "f"), 100)
		}
		tx, err := store.DB().BeginTx(ctx, nil)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback() }()
		before := rowsRead(t, store.Kind(), tx, "remote_tasks")
		got, err := persistence.StoreOnForTest(store, tx).RemoteTaskLease(ctx, persistence.RemoteTaskLeaseParams{Functions: []string{"f", "g"},
			Limit: 100, Token: "t", Lease: time.Minute, Worker: "w", Now: persistence.Now()})
		require.NoError(t, err)
		require.Len(t, got, 100)
		require.Less(t, rowsRead(t, store.Kind(), tx, "remote_tasks")-before, int64(1000), "rows read for a lease of 100")
	})
}
