package persistence_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// TestWorkflowFilterTopLevel checks the filter the dashboard lists by default: top-level
// workflows only (no parent), or children only, in the list and its keyset pages, in exact and
// capped counts and stats, and in memory for live subscriptions, on every backend.
func TestWorkflowFilterTopLevel(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		parents := []*persistence.Workflow{
			newWorkflow("fork", persistence.StatusWaiting, nil),
			newWorkflow("a", persistence.StatusFinished, nil),
			newWorkflow("b", persistence.StatusManual, nil),
		}
		require.NoError(t, store.WorkflowInsertMany(ctx, parents))
		var children []*persistence.Workflow
		for i := 0; i < 4; i++ {
			st := persistence.StatusInProgress
			if i%2 == 0 {
				st = persistence.StatusFinished
			}
			c := newWorkflow("fork", st, nil)
			c.ParentID, c.RootID = &parents[0].ID, &parents[0].ID
			children = append(children, c)
		}
		require.NoError(t, store.WorkflowInsertMany(ctx, children))
		grandchild := newWorkflow("a", persistence.StatusManual, nil)
		grandchild.ParentID, grandchild.RootID = &children[1].ID, &parents[0].ID
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{grandchild}))
		top := []int64{parents[2].ID, parents[1].ID, parents[0].ID} // newest first
		kids := []int64{grandchild.ID, children[3].ID, children[2].ID, children[1].ID, children[0].ID}
		require.NoError(t, store.Analyze(ctx))

		list := func(f persistence.WorkflowFilter) []int64 {
			t.Helper()
			page, _, err := store.WorkflowList(ctx, persistence.WorkflowListParams{Filter: f, Desc: true, Limit: 100})
			require.NoError(t, err)
			return idsOf(page)
		}
		onlyTop := persistence.WorkflowFilter{TopLevel: ptr(true)}
		onlyKids := persistence.WorkflowFilter{TopLevel: ptr(false)}
		require.Equal(t, top, list(onlyTop))
		require.Equal(t, kids, list(onlyKids))
		require.Len(t, list(persistence.WorkflowFilter{}), 8, "null: every workflow")
		require.Equal(t, []int64{parents[0].ID}, list(persistence.WorkflowFilter{TopLevel: ptr(true), Types: []string{"fork"}}), "with other conditions")
		require.Empty(t, list(persistence.WorkflowFilter{TopLevel: ptr(true), ParentID: &parents[0].ID}))

		// Keyset pages of top-level workflows, two at a time.
		first, more, err := store.WorkflowList(ctx, persistence.WorkflowListParams{Filter: onlyTop, Desc: true, Limit: 2})
		require.NoError(t, err)
		require.True(t, more)
		last := first[len(first)-1].OrderKey(persistence.WorkflowOrderCreated)
		second, more, err := store.WorkflowList(ctx, persistence.WorkflowListParams{Filter: onlyTop, Desc: true, Limit: 2, After: &last})
		require.NoError(t, err)
		require.False(t, more)
		require.Equal(t, top, append(idsOf(first), idsOf(second)...))

		// Counts and stats honour it, exact below the limit and capped above it.
		c, err := store.WorkflowCountUpTo(ctx, onlyTop, 100)
		require.NoError(t, err)
		require.Equal(t, persistence.Count{N: 3}, c)
		c, err = store.WorkflowCountUpTo(ctx, onlyKids, 100)
		require.NoError(t, err)
		require.Equal(t, persistence.Count{N: 5}, c)
		n, err := store.WorkflowCount(ctx, onlyTop)
		require.NoError(t, err)
		require.Equal(t, 3, n)
		c, err = store.WorkflowCountUpTo(ctx, onlyKids, 2)
		require.NoError(t, err)
		if c.Estimate {
			require.GreaterOrEqual(t, c.N, 3, "never below what was counted")
		} else {
			require.Equal(t, persistence.Count{N: 5}, c)
		}
		stats, err := store.WorkflowStatsUpTo(ctx, onlyTop, 100)
		require.NoError(t, err)
		require.Equal(t, persistence.WorkflowStatCounts{Total: persistence.Count{N: 3}, ByStatus: map[persistence.Status]persistence.Count{
			persistence.StatusWaiting: {N: 1}, persistence.StatusFinished: {N: 1}, persistence.StatusManual: {N: 1}}}, stats)
		stats, err = store.WorkflowStatsUpTo(ctx, onlyKids, 100)
		require.NoError(t, err)
		require.Equal(t, persistence.WorkflowStatCounts{Total: persistence.Count{N: 5}, ByStatus: map[persistence.Status]persistence.Count{
			persistence.StatusInProgress: {N: 2}, persistence.StatusFinished: {N: 2}, persistence.StatusManual: {N: 1}}}, stats)
		stats, err = store.WorkflowStatsUpTo(ctx, onlyTop, 1)
		require.NoError(t, err)
		require.Equal(t, persistence.Count{N: 1}, stats.ByStatus[persistence.StatusManual], "an indexed status counted under the filter")
		types, err := store.WorkflowStatsByTypeUpTo(ctx, onlyTop, 100)
		require.NoError(t, err)
		require.Len(t, types, 3)
		for _, ty := range types {
			require.Equal(t, persistence.Count{N: 1}, ty.Total, ty.Type)
		}

		// In memory, as live subscriptions filter: the same rows as the SQL.
		all, _, err := store.WorkflowList(ctx, persistence.WorkflowListParams{Desc: true, Limit: 100})
		require.NoError(t, err)
		for _, f := range []persistence.WorkflowFilter{onlyTop, onlyKids} {
			var inMemory []int64
			for _, w := range all {
				if f.Matches(w) {
					inMemory = append(inMemory, w.ID)
				}
			}
			require.Equal(t, list(f), inMemory)
		}
		require.False(t, onlyTop.OnlyEventFields(), "an event without its workflow cannot tell its parent")
	})
}
