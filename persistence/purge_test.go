package persistence_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

func TestWorkflowPurgeRemovesEndedTreesWithTheirHistory(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		old := persistence.Now().Add(-48 * time.Hour)
		recent := persistence.Now()
		ended := func(finished time.Time) *persistence.Workflow {
			w := newWorkflow("t", persistence.StatusFinished, nil)
			w.Finished = &finished
			return w
		}
		gone, keptRecent, keptRunningChild := ended(old), ended(recent), ended(old)
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{gone, keptRecent, keptRunningChild}))
		child := ended(old)
		child.ParentID, child.RootID = &gone.ID, &gone.ID
		running := newWorkflow("t", persistence.StatusInProgress, nil)
		running.ParentID, running.RootID = &keptRunningChild.ID, &keptRunningChild.ID
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{child, running}))
		for _, w := range []*persistence.Workflow{gone, child, keptRecent} {
			ti := &persistence.TaskInstance{WorkflowID: w.ID, State: "s", TaskType: "handler", Attempt: 1, Status: persistence.TaskSucceeded, Started: old}
			require.NoError(t, store.TaskInstanceInsertMany(ctx, []*persistence.TaskInstance{ti}))
			require.NoError(t, store.ActionInsertMany(ctx, []*persistence.Action{{WorkflowID: w.ID, Type: persistence.ActionStateExecution, State: "s", TaskInstanceID: &ti.ID}}))
			require.NoError(t, store.ChangeEventInsertMany(ctx, []*persistence.ChangeEvent{{WorkflowID: w.ID, Type: "X", Status: w.Status, State: "s"}}))
			_, err := store.SideEffectRecord(ctx, persistence.SideEffectRecordParams{WorkflowID: w.ID, Key: "k", ValueType: "string", Value: []byte(`"v"`)})
			require.NoError(t, err)
		}

		n, err := store.WorkflowPurge(ctx, persistence.WorkflowPurgeParams{FinishedBefore: persistence.Now().Add(-24 * time.Hour)})
		require.NoError(t, err)
		require.Equal(t, 2, n, "the old tree: its root and its child")
		left, err := store.WorkflowGetMany(ctx, []int64{gone.ID, child.ID, keptRecent.ID, keptRunningChild.ID, running.ID})
		require.NoError(t, err)
		require.Len(t, left, 3, "recent trees and trees with a running workflow stay")
		counts, err := store.CountByWorkflow(ctx, "actions", []int64{gone.ID, child.ID, keptRecent.ID})
		require.NoError(t, err)
		require.Equal(t, map[int64]int{keptRecent.ID: 1}, counts)
		ses, err := store.SideEffectList(ctx, []int64{gone.ID, child.ID, keptRecent.ID})
		require.NoError(t, err)
		require.Len(t, ses, 1)

		n, err = store.WorkflowPurge(ctx, persistence.WorkflowPurgeParams{FinishedBefore: persistence.Now().Add(-24 * time.Hour)})
		require.NoError(t, err)
		require.Zero(t, n)
	})
}
