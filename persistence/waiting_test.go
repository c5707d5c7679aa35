package persistence_test

import (
	"context"
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
			require.Contains(t, planOf(t, store, "SELECT id FROM workflows WHERE "+persistence.WaitingForForTest+
				" AND wait_signal = ? ORDER BY id LIMIT 100", "payment"), "workflows_wait_signal_idx (wait_signal=?)")
		case persistence.KindPostgres, persistence.KindMySQL:
			read := readsDuring(t, store, "workflows", func(on *persistence.Store, _ bun.Tx) {
				for _, name := range []string{"payment", "unknown"} {
					_, err := on.WorkflowWaitingForSignal(ctx, name, 100)
					require.NoError(t, err)
				}
				_, err := on.WorkflowWaitingAmong(ctx, 0, 100)
				require.NoError(t, err)
			})
			require.Less(t, read.Rows, int64(100), "rows read for three lookups")
		}
	})
}
