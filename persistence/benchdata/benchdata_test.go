package benchdata_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/benchdata"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// A bench run finds the first of its workflows still open, and deletes its workflows with their
// history and change events, leaving the others alone.
func TestFindAndDeleteARunsWorkflows(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		now := persistence.Now()
		wf := func(st persistence.Status) *persistence.Workflow {
			return &persistence.Workflow{Type: "t", DefinitionVersion: 1, Status: st, State: "s", ExecutorGroup: "default",
				Input: json.RawMessage(`{}`), Variables: json.RawMessage(`{}`), Created: now, Modified: now}
		}
		done, open, other := wf(persistence.StatusFinished), wf(persistence.StatusInProgress), wf(persistence.StatusInProgress)
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{done, open, other}))

		first, err := benchdata.WorkflowFirstInIDRange(ctx, store, benchdata.WorkflowIDRangeParams{FromID: done.ID, ToID: open.ID,
			Statuses: []persistence.Status{persistence.StatusInProgress}})
		require.NoError(t, err)
		require.Equal(t, open.ID, first)
		first, err = benchdata.WorkflowFirstInIDRange(ctx, store, benchdata.WorkflowIDRangeParams{FromID: done.ID, ToID: done.ID,
			Statuses: []persistence.Status{persistence.StatusInProgress}})
		require.NoError(t, err)
		require.Zero(t, first)

		for _, w := range []*persistence.Workflow{done, open, other} {
			require.NoError(t, store.ActionInsertMany(ctx, []*persistence.Action{{WorkflowID: w.ID, Type: persistence.ActionStateExecution, State: "s", At: now}}))
			require.NoError(t, store.ChangeEventInsertMany(ctx, []*persistence.ChangeEvent{{WorkflowID: w.ID, Type: "X", Status: w.Status, State: "s", At: now}}))
		}
		n, err := benchdata.WorkflowDelete(ctx, store, []int64{done.ID, open.ID})
		require.NoError(t, err)
		require.Equal(t, 2, n)
		left, err := store.WorkflowGetMany(ctx, []int64{done.ID, open.ID, other.ID})
		require.NoError(t, err)
		require.Len(t, left, 1)
		require.Equal(t, other.ID, left[0].ID)
		counts, err := store.CountByWorkflow(ctx, "actions", []int64{done.ID, open.ID, other.ID})
		require.NoError(t, err)
		require.Equal(t, map[int64]int{other.ID: 1}, counts)
		var events int
		require.NoError(t, store.Bun().NewRaw("SELECT count(*) FROM change_events WHERE workflow_id IN (?)", bun.List([]int64{done.ID, open.ID})).Scan(ctx, &events))
		require.Zero(t, events)
	})
}
