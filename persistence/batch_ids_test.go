package persistence_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// A batch insert hands back each row's ID in the order the rows were given, on every backend: after
// the newest rows of the table were deleted (so the next ID is not one above the largest left), and
// for two batches in one transaction. SQLite reads the IDs from the statement's last rowid rather
// than from a RETURNING clause: the order of the rows in jsonb_each is the order they are inserted in.
func TestBatchInsertIDsFollowInputOrder(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		wf := newWorkflow("t.batch-ids", persistence.StatusInProgress, nil)
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{wf}))
		batch := func(prefix string, n int) []*persistence.Action {
			out := make([]*persistence.Action, n)
			for i := range out {
				out[i] = &persistence.Action{WorkflowID: wf.ID, Type: persistence.ActionStateExecution, State: fmt.Sprintf("%s-%d", prefix, i)}
			}
			return out
		}
		first := batch("first", 10)
		require.NoError(t, store.ActionInsertMany(ctx, first))
		_, err := store.DB().NewDelete().Model((*persistence.Action)(nil)).Where("id > ?", first[4].ID).Exec(ctx)
		require.NoError(t, err)

		second, third := batch("second", 700), batch("third", 300)
		require.NoError(t, store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
			if err := tx.ActionInsertMany(ctx, second); err != nil {
				return err
			}
			return tx.ActionInsertMany(ctx, third)
		}))
		all := append(second, third...)
		ids := make([]int64, len(all))
		for i, a := range all {
			ids[i] = a.ID
			if i > 0 {
				require.Greater(t, a.ID, all[i-1].ID, "IDs ascend in input order")
			}
		}
		require.Greater(t, all[0].ID, first[9].ID, "a deleted row's ID is not handed out again")
		got, err := store.ActionGetMany(ctx, ids)
		require.NoError(t, err)
		require.Len(t, got, len(all))
		byID := map[int64]string{}
		for _, a := range got {
			byID[a.ID] = a.State
		}
		for _, a := range all {
			require.Equal(t, a.State, byID[a.ID], "the row stored under ID %d", a.ID)
		}
	})
}
