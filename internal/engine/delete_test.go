package engine_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// A family as steps would leave it: a parent, its child and the child's child.
func family(t *testing.T, store *persistence.Store, statuses [3]persistence.Status) [3]int64 {
	t.Helper()
	ctx := context.Background()
	var ids [3]int64
	for i, st := range statuses {
		now := persistence.Now()
		w := &persistence.Workflow{Type: "demo.order", DefinitionVersion: 1, Status: st, State: "validate", ExecutorGroup: "default",
			Input: []byte(`{}`), Variables: []byte(`{}`), Created: now, Modified: now}
		if i > 0 {
			w.ParentID, w.RootID = &ids[i-1], &ids[0]
		}
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{w}))
		ids[i] = w.ID
		require.NoError(t, store.ActionInsertMany(ctx, []*persistence.Action{{WorkflowID: w.ID, Type: persistence.ActionStateExecution,
			State: "validate", At: now}}))
	}
	return ids
}

func TestDeleteTakesDescendantsAndRefusesRunningOnes(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		e := newEngine(t, store)
		fin, run := persistence.StatusFinished, persistence.StatusInProgress
		ids := family(t, store, [3]persistence.Status{fin, fin, run})

		requireCode(t, e.Delete(ctx, workflow.DeleteParams{ID: ids[0]}), workflow.CodeConflict, "")
		requireCode(t, e.Delete(ctx, workflow.DeleteParams{ID: ids[2]}), workflow.CodeConflict, "")
		requireCode(t, e.Delete(ctx, workflow.DeleteParams{ID: ids[2] + 1000}), workflow.CodeNotFound, "id")
		for _, id := range ids {
			_, err := store.WorkflowGet(ctx, id)
			require.NoError(t, err, "a refused delete deletes nothing")
		}
		_, err := e.Cancel(ctx, workflow.ChangeParams{ID: ids[2]})
		require.NoError(t, err)
		require.NoError(t, e.Delete(ctx, workflow.DeleteParams{ID: ids[0], Actor: "tester", Reason: "old"}))
		for _, id := range ids {
			_, err := store.WorkflowGet(ctx, id)
			require.ErrorIs(t, err, persistence.ErrNotFound)
		}
		actions, err := store.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: ids[:]})
		require.NoError(t, err)
		require.Empty(t, actions)
		log, err := store.AuditList(ctx, persistence.AuditListParams{Limit: 10})
		require.NoError(t, err)
		require.Len(t, log, 1)
		require.Equal(t, "deleteWorkflow", log[0].Action)
		require.Equal(t, "tester", log[0].Actor)
	})
}
