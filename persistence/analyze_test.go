package persistence_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// A table analyzed while all its rows were deleted, then filled again: on PostgreSQL the planner
// took it for empty (0 rows on the pages it had) and looked workflows up by ID with a scan of the
// whole of workflows_type_idx, until RefreshStaleStatistics analyzed it. On every backend, once
// it ran, the lookup reads the primary key, and a second run finds nothing to do. (SQLite and
// MariaDB, where RefreshStaleStatistics has nothing to do, refill a tenth of the rows: the
// 30,000 took SQLite 50 s under the race detector.)
func TestStaleStatisticsOfARefilledTableAreRefreshed(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		pg := store.Kind() == persistence.KindPostgres
		if pg { // autovacuum must not analyze it behind the test's back
			_, err := store.DB().ExecContext(ctx, "ALTER TABLE workflows SET (autovacuum_enabled = false)")
			require.NoError(t, err)
		}
		insert := func(n int) []int64 {
			now := persistence.Now()
			wfs := make([]*persistence.Workflow, n)
			for i := range wfs {
				wfs[i] = newWorkflow("refill", persistence.StatusCreated, &now)
			}
			for from := 0; from < n; from += 5000 {
				require.NoError(t, store.WorkflowInsertMany(ctx, wfs[from:min(from+5000, n)]))
			}
			ids := make([]int64, 0, 30)
			for _, w := range wfs[n/2 : n/2+30] {
				ids = append(ids, w.ID)
			}
			return ids
		}
		rows := persistence.StaleStatisticsRows + 1000
		if !pg {
			rows /= 10
		}
		insert(rows)
		_, err := store.DB().ExecContext(ctx, "DELETE FROM workflows")
		require.NoError(t, err)
		analyze := "ANALYZE workflows"
		if store.Kind() == persistence.KindMySQL {
			analyze = "ANALYZE TABLE workflows"
		}
		_, err = store.DB().ExecContext(ctx, analyze)
		require.NoError(t, err)
		ids := insert(4 * rows)

		lookup := func() string { return planOf(t, store, "SELECT id FROM workflows WHERE id IN (?)", bun.List(ids)) }
		if pg {
			require.NotContains(t, lookup(), "workflows_pkey", "the statistics of an empty table send a lookup by ID elsewhere")
			var analyzed []string
			require.Eventually(t, func() bool { // the row counts reach the statistics views within seconds
				analyzed, err = store.RefreshStaleStatistics(ctx)
				require.NoError(t, err)
				return len(analyzed) > 0
			}, time.Minute, 100*time.Millisecond)
			require.Equal(t, []string{"workflows"}, analyzed)
		}
		again, err := store.RefreshStaleStatistics(ctx)
		require.NoError(t, err)
		require.Empty(t, again)
		require.Contains(t, lookup(), map[persistence.Kind]string{persistence.KindPostgres: "workflows_pkey",
			persistence.KindMySQL: "PRIMARY", persistence.KindSQLite: "INTEGER PRIMARY KEY"}[store.Kind()])
	})
}

// planOf is the database's plan of a query, every row of its EXPLAIN as one text.
func planOf(t *testing.T, store *persistence.Store, query string, args ...any) string {
	t.Helper()
	var b strings.Builder
	for _, row := range explainRows(t, store, query, args...) {
		fmt.Fprintln(&b, row)
	}
	return b.String()
}

// explainRows runs query under EXPLAIN (EXPLAIN QUERY PLAN on SQLite) and returns the rows of
// the plan, each as its columns' values by name.
func explainRows(t *testing.T, store *persistence.Store, query string, args ...any) []map[string]string {
	t.Helper()
	explain := "EXPLAIN "
	if store.Kind() == persistence.KindSQLite {
		explain = "EXPLAIN QUERY PLAN "
	}
	rows, err := store.DB().QueryContext(context.Background(), explain+query, args...)
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var out []map[string]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		row := make(map[string]string, len(cols))
		for i, c := range cols {
			row[c] = vals[i].String
		}
		out = append(out, row)
	}
	require.NoError(t, rows.Err())
	return out
}

// reads is what a statement read: on PostgreSQL from one table, its sequential scans and the rows
// its scans read (a sequential scan counts every row), from pg_stat_xact_user_tables; on MariaDB
// the handler's row reads of any table (Handler_read%), and no scan count.
type reads struct{ SeqScans, Rows int64 }

// readsDuring runs fn in a transaction (on, a Store on it; tx, the transaction itself), rolls it
// back and returns what fn read (PostgreSQL and MariaDB only).
func readsDuring(t *testing.T, store *persistence.Store, table string, fn func(on *persistence.Store, tx bun.Tx)) reads {
	t.Helper()
	tx, err := store.DB().BeginTx(context.Background(), nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	before := sessionReads(t, store.Kind(), tx, table)
	fn(persistence.StoreOnForTest(store, tx), tx)
	after := sessionReads(t, store.Kind(), tx, table)
	return reads{SeqScans: after.SeqScans - before.SeqScans, Rows: after.Rows - before.Rows}
}

// sessionReads is what tx's session has read so far (see reads).
func sessionReads(t *testing.T, kind persistence.Kind, tx bun.Tx, table string) (r reads) {
	t.Helper()
	ctx := context.Background()
	if kind == persistence.KindPostgres {
		require.NoError(t, tx.NewRaw(`SELECT seq_scan AS seq_scans, seq_tup_read + idx_tup_fetch AS rows
			FROM pg_stat_xact_user_tables WHERE relid = ?::regclass`, table).Scan(ctx, &r.SeqScans, &r.Rows))
		return r
	}
	rows, err := tx.QueryContext(ctx, "SHOW SESSION STATUS LIKE 'Handler_read%'")
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var name string
		var v int64
		require.NoError(t, rows.Scan(&name, &v))
		r.Rows += v
	}
	require.NoError(t, rows.Err())
	return r
}
