package persistence_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// A published event finds the workflows that wait for a signal of its type through
// workflows_wait_signal_idx, reading those rows alone, on every backend: before the index, each
// event read the whole workflows table (a sequential scan on PostgreSQL, 100,000 rows for none
// found), ended workflows and those waiting for other signals included.
func TestWorkflowsWaitingForASignalAreFoundByItsName(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		waiting := func(signal string, status persistence.Status, n int) []*persistence.Workflow {
			wfs := make([]*persistence.Workflow, n)
			for i := range wfs {
				wfs[i] = newWorkflow("t.wait", status, nil)
				if signal != "" {
					wfs[i].WaitSignal = &signal
				}
			}
			require.NoError(t, store.WorkflowInsertMany(ctx, wfs))
			return wfs
		}
		waiting("approval", persistence.StatusWaiting, 3000)
		waiting("", persistence.StatusFinished, 3000)
		paid := waiting("payment", persistence.StatusWaiting, 2)
		among := waiting(persistence.WaitSignalAmong, persistence.StatusWaiting, 1)
		waiting("payment", persistence.StatusFinished, 5) // ended with its last wait recorded
		require.NoError(t, store.Analyze(ctx))

		ids, err := store.WorkflowWaitingForSignal(ctx, "payment", 100)
		require.NoError(t, err)
		require.Equal(t, []int64{paid[0].ID, paid[1].ID}, ids)
		ids, err = store.WorkflowWaitingForSignal(ctx, "unknown", 100)
		require.NoError(t, err)
		require.Empty(t, ids)
		ws, err := store.WorkflowWaitingAmong(ctx, 0, 100)
		require.NoError(t, err)
		require.Len(t, ws, 1)
		require.Equal(t, among[0].ID, ws[0].ID)

		switch store.Kind() {
		case persistence.KindSQLite:
			var plan []string
			for _, row := range explainRows(t, store, "SELECT id FROM workflows WHERE "+persistence.WaitingForForTest+
				" AND wait_signal = ? ORDER BY id LIMIT 100", "payment") {
				plan = append(plan, row["detail"])
			}
			require.Contains(t, strings.Join(plan, "\n"), "workflows_wait_signal_idx (wait_signal=?)")
		case persistence.KindPostgres, persistence.KindMySQL:
			tx, err := store.DB().BeginTx(ctx, nil)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback() }()
			before := rowsRead(t, store.Kind(), tx, "workflows")
			for _, name := range []string{"payment", "unknown"} {
				_, err := persistence.StoreOnForTest(store, tx).WorkflowWaitingForSignal(ctx, name, 100)
				require.NoError(t, err)
			}
			_, err = persistence.StoreOnForTest(store, tx).WorkflowWaitingAmong(ctx, 0, 100)
			require.NoError(t, err)
			require.Less(t, rowsRead(t, store.Kind(), tx, "workflows")-before, int64(100), "rows read for three lookups")
		}
	})
}

// rowsRead is what the transaction's session has read so far: on PostgreSQL the rows its scans
// read from table (sequential scans count every row), on MariaDB the handler's reads of any table.
func rowsRead(t *testing.T, kind persistence.Kind, tx bun.Tx, table string) int64 {
	t.Helper()
	ctx := context.Background()
	var n int64
	if kind == persistence.KindPostgres {
		require.NoError(t, tx.NewRaw(`SELECT seq_tup_read + idx_tup_fetch FROM pg_stat_xact_user_tables
			WHERE relid = ?::regclass`, table).Scan(ctx, &n))
		return n
	}
	rows, err := tx.QueryContext(ctx, "SHOW SESSION STATUS LIKE 'Handler_read%'")
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var name string
		var v int64
		require.NoError(t, rows.Scan(&name, &v))
		n += v
	}
	require.NoError(t, rows.Err())
	return n
}
