package persistence_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

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
		tx, err := store.DB().BeginTx(ctx, nil)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback() }()
		var before int64
		if store.Kind() == persistence.KindPostgres {
			before = rowsRead(t, store.Kind(), tx, "idempotency_keys")
		}
		require.NoError(t, persistence.StoreOnForTest(store, tx).WorkflowDelete(ctx, ids))
		if store.Kind() == persistence.KindPostgres {
			// At most one read of the table for the batch (its statement may scan a table this
			// small), never one per deleted workflow (100 x 1,000 rows).
			require.Less(t, rowsRead(t, store.Kind(), tx, "idempotency_keys")-before, int64(5000),
				"rows of idempotency_keys read to delete 100 workflows")
		}
		var left int
		require.NoError(t, tx.NewRaw("SELECT count(*) FROM idempotency_keys").Scan(ctx, &left))
		require.Equal(t, len(wfs)-len(ids), left, "the deleted workflows' keys are gone, the others stay")
		require.NoError(t, tx.Rollback()) // SQLite's one connection, for the plan below
		if store.Kind() == persistence.KindSQLite {
			var plan []string
			for _, row := range explainRows(t, store, "DELETE FROM idempotency_keys WHERE workflow_id = ?", ids[0]) {
				plan = append(plan, row["detail"])
			}
			require.Contains(t, strings.Join(plan, "\n"), "idempotency_keys_workflow_idx (workflow_id=?)")
		}
	})
}
