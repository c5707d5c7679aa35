package persistence_test

import (
	"context"
	"encoding/json"
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

// halfLeased creates n pending tasks of f and 10 of g, and leases half of f's, 100 a lease, before
// and after (when analyze) statistics taken while they were all pending.
func halfLeased(t *testing.T, store *persistence.Store, n int, analyze bool) {
	t.Helper()
	pendingTasks(t, store, "f", n)
	pendingTasks(t, store, "g", 10)
	if analyze {
		require.NoError(t, store.Analyze(context.Background()))
	}
	for range n / 200 {
		require.Len(t, lease(t, store, 100, "f"), 100)
	}
}

// lease leases up to limit tasks of fns through store (a Store on a transaction, see
// persistence.StoreOnForTest, to read the transaction's counters around it).
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
		halfLeased(t, store, 10000, true)
		for _, fns := range [][]string{{"f"}, {"f", "g"}} {
			read := readsDuring(t, store, "remote_tasks", func(on *persistence.Store, _ bun.Tx) {
				require.Len(t, lease(t, on, 100, fns...), 100)
			})
			require.Zero(t, read.SeqScans, "%v: no scan of the table", fns)
			require.Less(t, read.Rows, int64(1000), "%v: rows read for a lease of 100", fns)
		}
	})
}

// On SQLite, a lease of several functions reads each function's oldest pending tasks from
// remote_tasks_pending_idx; after ANALYZE, the read of all of them in ID order scanned the table.
func TestRemoteTaskLeaseReadsEachFunctionsIndexOnSQLite(t *testing.T) {
	t.Parallel()
	dbtest.ForKinds(t, []persistence.Kind{persistence.KindSQLite}, func(t *testing.T, store *persistence.Store) {
		halfLeased(t, store, 2000, false)
		_, err := store.DB().ExecContext(context.Background(), "ANALYZE")
		require.NoError(t, err)
		q, args := persistence.SQLiteLeaseQueryForTest([]string{"f", "g"}, 100)
		plan := planOf(t, store, q, args...)
		require.NotContains(t, plan, "SCAN remote_tasks", plan)
		require.Equal(t, 2, strings.Count(plan, "INDEX remote_tasks_pending_idx (function=?)"), plan)
	})
}

// BenchmarkRemoteTaskLeaseBurst leases a burst of pending tasks (CAIRN_BENCH_TASKS, 100,000 by
// default) of one function in leases of 100, each its own transaction, after ANALYZE took the
// statistics of the burst all pending: the time a lease takes, averaged over the whole burst.
//
//	TEST_DATABASE_URL=... go test ./persistence -run '^$' -bench RemoteTaskLeaseBurst -benchtime 1x
func BenchmarkRemoteTaskLeaseBurst(b *testing.B) {
	store, n := benchStore(b, "CAIRN_BENCH_TASKS")
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
		halfLeased(t, store, 10000, false)
		read := readsDuring(t, store, "remote_tasks", func(on *persistence.Store, _ bun.Tx) {
			require.Len(t, lease(t, on, 100, "f", "g"), 100)
		})
		require.Less(t, read.Rows, int64(1000), "rows read for a lease of 100")
	})
}
