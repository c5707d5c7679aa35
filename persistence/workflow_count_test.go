package persistence_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// TestWorkflowCountUpTo checks that counts are exact up to the limit and flagged estimates above
// it (SQLite, which has no estimate, counts in full), with and without filters.
func TestWorkflowCountUpTo(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		var wfs []*persistence.Workflow
		for i := 0; i < 40; i++ {
			st := persistence.StatusFinished
			if i%4 == 0 {
				st = persistence.StatusInProgress
			}
			wfs = append(wfs, newWorkflow("a", st, nil))
		}
		for i := 0; i < 3; i++ {
			wfs = append(wfs, newWorkflow("b", persistence.StatusManual, nil))
		}
		require.NoError(t, store.WorkflowInsertMany(ctx, wfs))
		_, _, err := store.DefinitionSave(ctx, persistence.DefinitionSaveParams{Type: "a", Checksum: "x", Spec: []byte(`{}`), ExecutorGroup: "default"})
		require.NoError(t, err)
		_, _, err = store.DefinitionSave(ctx, persistence.DefinitionSaveParams{Type: "b", Checksum: "x", Spec: []byte(`{}`), ExecutorGroup: "default"})
		require.NoError(t, err)
		require.NoError(t, store.Analyze(ctx))
		estimates := store.Kind() != persistence.KindSQLite

		count := func(f persistence.WorkflowFilter, upTo int) persistence.Count {
			t.Helper()
			c, err := store.WorkflowCountUpTo(ctx, f, upTo)
			require.NoError(t, err)
			return c
		}
		all := persistence.WorkflowFilter{}
		onlyB := persistence.WorkflowFilter{Types: []string{"b"}}
		require.Equal(t, persistence.Count{N: 43}, count(all, 100), "exact below the limit")
		require.Equal(t, persistence.Count{N: 43}, count(all, 43), "exact at the limit")
		require.Equal(t, persistence.Count{N: 43}, count(all, 0), "no limit: exact")
		require.Equal(t, persistence.Count{N: 3}, count(onlyB, 5), "a filter below the limit: exact")
		require.Equal(t, persistence.Count{N: 10}, count(persistence.WorkflowFilter{Statuses: []persistence.Status{persistence.StatusInProgress}}, 10))
		above := count(all, 5)
		if estimates {
			require.True(t, above.Estimate, "above the limit: an estimate")
			require.GreaterOrEqual(t, above.N, 6, "never below what was counted")
			require.Less(t, above.N, 1000)
			filtered := count(persistence.WorkflowFilter{Types: []string{"a"}, Statuses: []persistence.Status{persistence.StatusFinished}}, 5)
			require.True(t, filtered.Estimate)
			require.GreaterOrEqual(t, filtered.N, 6)
		} else {
			require.Equal(t, persistence.Count{N: 43}, above, "SQLite counts in full")
		}

		stats, err := store.WorkflowStatsUpTo(ctx, all, 5)
		require.NoError(t, err)
		require.Equal(t, persistence.Count{N: 3}, stats.ByStatus[persistence.StatusManual], "a small status is exact")
		require.NotContains(t, stats.ByStatus, persistence.StatusFailed)
		if estimates {
			require.True(t, stats.Total.Estimate)
			if store.Kind() == persistence.KindPostgres {
				require.True(t, stats.ByStatus[persistence.StatusFinished].Estimate, "no index holds FINISHED: the planner's estimate")
				require.True(t, stats.ByStatus[persistence.StatusInProgress].Estimate)
			} else {
				require.Equal(t, persistence.Count{N: 30}, stats.ByStatus[persistence.StatusFinished], "MariaDB groups the unindexed statuses exactly")
				require.Equal(t, persistence.Count{N: 10}, stats.ByStatus[persistence.StatusInProgress])
			}
		} else {
			require.Equal(t, persistence.Count{N: 43}, stats.Total)
			require.Equal(t, persistence.Count{N: 30}, stats.ByStatus[persistence.StatusFinished])
		}
		stats, err = store.WorkflowStatsUpTo(ctx, all, 100)
		require.NoError(t, err)
		require.Equal(t, persistence.WorkflowStatCounts{Total: persistence.Count{N: 43}, ByStatus: map[persistence.Status]persistence.Count{
			persistence.StatusFinished: {N: 30}, persistence.StatusInProgress: {N: 10}, persistence.StatusManual: {N: 3}}}, stats)
		stats, err = store.WorkflowStatsUpTo(ctx, persistence.WorkflowFilter{Statuses: []persistence.Status{persistence.StatusManual, persistence.StatusFinished}}, 5)
		require.NoError(t, err)
		require.NotContains(t, stats.ByStatus, persistence.StatusInProgress, "the filter's statuses only")
		require.Equal(t, persistence.Count{N: 3}, stats.ByStatus[persistence.StatusManual])

		types, err := store.WorkflowStatsByTypeUpTo(ctx, all, 5)
		require.NoError(t, err)
		require.Len(t, types, 2)
		require.Equal(t, "a", types[0].Type)
		require.Equal(t, estimates, types[0].Total.Estimate)
		require.Equal(t, "b", types[1].Type)
		require.Equal(t, persistence.Count{N: 3}, types[1].Total)
		require.Equal(t, map[persistence.Status]persistence.Count{persistence.StatusManual: {N: 3}}, types[1].ByStatus)
		types, err = store.WorkflowStatsByTypeUpTo(ctx, all, 100)
		require.NoError(t, err)
		require.Equal(t, []persistence.TypeStatCounts{
			{Type: "a", WorkflowStatCounts: persistence.WorkflowStatCounts{Total: persistence.Count{N: 40}, ByStatus: map[persistence.Status]persistence.Count{
				persistence.StatusFinished: {N: 30}, persistence.StatusInProgress: {N: 10}}}},
			{Type: "b", WorkflowStatCounts: persistence.WorkflowStatCounts{Total: persistence.Count{N: 3}, ByStatus: map[persistence.Status]persistence.Count{
				persistence.StatusManual: {N: 3}}}},
		}, types)
	})
}

// TestWorkflowCountOfARareUnindexedFilter checks that on PostgreSQL a filter no index serves,
// which would read the whole table to count a few workflows, answers with the planner's
// estimate instead (flagged); elsewhere it is counted.
func TestWorkflowCountOfARareUnindexedFilter(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		n := 2000 // elsewhere the count runs whatever its cost: a small table shows it
		if store.Kind() == persistence.KindPostgres {
			n = 50000 // enough that the planner prices a scan above 1000
		}
		for done := 0; done < n; done += 1000 {
			wfs := make([]*persistence.Workflow, 1000)
			for i := range wfs {
				wfs[i] = newWorkflow("a", persistence.StatusFinished, nil)
				if done+i < 3 {
					wfs[i].State = "rare"
				}
			}
			require.NoError(t, store.WorkflowInsertMany(ctx, wfs))
		}
		require.NoError(t, store.Analyze(ctx))
		rare := persistence.WorkflowFilter{States: []string{"rare"}}
		c, err := store.WorkflowCountUpTo(ctx, rare, 10)
		require.NoError(t, err)
		if store.Kind() == persistence.KindPostgres {
			require.True(t, c.Estimate, "a scan of the table was not worth it")
			require.Less(t, c.N, 1000)
		} else {
			require.Equal(t, persistence.Count{N: 3}, c)
		}
		c, err = store.WorkflowCountUpTo(ctx, persistence.WorkflowFilter{Types: []string{"a"}}, 10)
		require.NoError(t, err)
		require.True(t, c.Estimate || store.Kind() == persistence.KindSQLite)
		c, err = store.WorkflowCountUpTo(ctx, rare, 0)
		require.NoError(t, err)
		require.Equal(t, persistence.Count{N: 3}, c, "no limit: exact")
	})
}
