package persistence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// TestWorkflowSaveManyGroupsOutcomesAndFences saves workflows changed alike and differently in
// one call, each at its own version, and refuses the whole call when one changed since it was read.
func TestWorkflowSaveManyGroupsOutcomesAndFences(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		due := persistence.Now()
		wfs := []*persistence.Workflow{
			newWorkflow("t.save", persistence.StatusCreated, &due), newWorkflow("t.save", persistence.StatusCreated, &due),
			newWorkflow("t.save", persistence.StatusCreated, nil), newWorkflow("t.save", persistence.StatusCreated, &due),
		}
		require.NoError(t, store.WorkflowInsertMany(ctx, wfs))
		bumped, err := store.WorkflowGet(ctx, wfs[1].ID)
		require.NoError(t, err)
		require.NoError(t, store.WorkflowSave(ctx, bumped)) // its version is now ahead of the others'

		var read []*persistence.Workflow
		err = store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
			var err error
			read, err = tx.WorkflowGetManyForUpdate(ctx, []int64{wfs[0].ID, wfs[1].ID, wfs[2].ID, 999999})
			return err
		})
		require.NoError(t, err)
		require.Len(t, read, 3, "an unknown ID is left out")
		end := persistence.Now().Add(time.Second)
		var cs []persistence.WorkflowChange
		for i, w := range read {
			c := persistence.WorkflowChange{Read: *w, W: w}
			w.Status, w.Finished, w.NextActivation = persistence.StatusCancelled, &end, nil
			if i == 2 {
				w.State = "elsewhere"
			}
			cs = append(cs, c)
		}
		versions := []int{read[0].Version, read[1].Version, read[2].Version}
		require.NoError(t, store.WorkflowSaveMany(ctx, cs))
		for i, w := range read {
			got, err := store.WorkflowGet(ctx, w.ID)
			require.NoError(t, err)
			require.Equal(t, persistence.StatusCancelled, got.Status)
			require.Nil(t, got.NextActivation)
			require.WithinDuration(t, end, *got.Finished, time.Millisecond)
			require.Equal(t, versions[i]+1, got.Version)
			require.Equal(t, got.Version, w.Version)
			require.Equal(t, map[bool]string{true: "elsewhere", false: "start"}[i == 2], got.State)
		}
		untouched, err := store.WorkflowGet(ctx, wfs[3].ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusCreated, untouched.Status)

		// A stale read: the whole call is refused, nothing of it written.
		stale := *read[0]
		stale.Version--
		fresh := *read[2]
		cs = []persistence.WorkflowChange{{Read: stale, W: &stale}, {Read: fresh, W: &fresh}}
		stale.State, fresh.State = "again", "again"
		err = store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error { return tx.WorkflowSaveMany(ctx, cs) })
		require.True(t, errors.Is(err, persistence.ErrConflict), "error: %v", err)
		for _, id := range []int64{read[0].ID, read[2].ID} {
			got, err := store.WorkflowGet(ctx, id)
			require.NoError(t, err)
			require.NotEqual(t, "again", got.State)
		}
	})
}
