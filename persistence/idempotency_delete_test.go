package persistence_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// Deleting workflows (a purge) deletes their idempotency keys by workflow, reading those alone, on
// every backend: without an index on idempotency_keys.workflow_id, PostgreSQL's foreign-key
// cascade read the whole table once per deleted workflow (8.7 ms a workflow with 200,000 keys),
// and SQLite's did the same.
func TestDeletingWorkflowsReadsOnlyTheirIdempotencyKeys(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		wfs := make([]*persistence.Workflow, 1000)
		for i := range wfs {
			wfs[i] = newWorkflow("t.idem", persistence.StatusFinished, nil)
		}
		require.NoError(t, store.WorkflowInsertMany(ctx, wfs))
		for i, w := range wfs {
			require.NoError(t, store.IdempotencyKeyInsert(ctx, &persistence.IdempotencyKey{Operation: "start",
				Key: fmt.Sprint("k", i), WorkflowID: w.ID}))
		}
		require.NoError(t, store.Analyze(ctx))
		ids := make([]int64, 100)
		for i := range ids {
			ids[i] = wfs[i].ID
		}
		if store.Kind() == persistence.KindPostgres {
			read := readsDuring(t, store, "idempotency_keys", func(on *persistence.Store, _ bun.Tx) {
				require.NoError(t, on.WorkflowDelete(ctx, ids))
			})
			// At most one read of the table for the batch (its statement may scan a table this
			// small), never one per deleted workflow (100 x 1,000 rows).
			require.Less(t, read.Rows, int64(5000), "rows of idempotency_keys read to delete 100 workflows")
		}
		require.NoError(t, store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error { return tx.WorkflowDelete(ctx, ids) }))
		var left int
		require.NoError(t, store.DB().NewRaw("SELECT count(*) FROM idempotency_keys").Scan(ctx, &left))
		require.Equal(t, len(wfs)-len(ids), left, "the deleted workflows' keys are gone, the others stay")
		if store.Kind() == persistence.KindSQLite {
			require.Contains(t, planOf(t, store, "DELETE FROM idempotency_keys WHERE workflow_id = ?", ids[0]),
				"idempotency_keys_workflow_idx (workflow_id=?)")
		}
	})
}
