package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// TestCountsExactUpToTheLimitThenEstimated checks totalCount and workflowStats: exact up to
// Config.ExactCountUpTo, flagged estimates above it (SQLite counts in full), with filters.
func TestCountsExactUpToTheLimitThenEstimated(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		small := setup(t, store, func(c *server.Config) { c.ExactCountUpTo = 5 })
		for i := 0; i < 10; i++ {
			key := "x"
			if i < 2 {
				key = "y"
			}
			_, err := small.engine.Start(ctx, workflow.StartParams{Type: "test.flow", BusinessKey: key})
			require.NoError(t, err)
		}
		require.NoError(t, store.Analyze(ctx))
		estimates := store.Kind() != persistence.KindSQLite

		type conn struct {
			TotalCount           int
			TotalCountIsEstimate bool
		}
		list := func(b *bundle, key *string) conn {
			t.Helper()
			var out struct{ Workflows conn }
			b.must(t, `query($k: String) { workflows(first: 2, filter: {businessKey: $k}) { totalCount totalCountIsEstimate } }`, &out, map[string]any{"k": key})
			return out.Workflows
		}
		got := list(small, nil)
		if estimates {
			require.True(t, got.TotalCountIsEstimate, "above the limit: flagged estimate")
			require.GreaterOrEqual(t, got.TotalCount, 6)
		} else {
			require.Equal(t, conn{TotalCount: 10}, got)
		}
		require.Equal(t, conn{TotalCount: 2}, list(small, ptr("y")), "a filter below the limit: exact")
		exact := setup(t, store)
		require.Equal(t, conn{TotalCount: 10}, list(exact, nil), "the default limit counts 10 exactly")
		require.Equal(t, conn{TotalCount: 8}, list(exact, ptr("x")))

		type statusCount struct {
			Status     string
			Count      int
			IsEstimate bool
		}
		type stats struct {
			Total           int
			TotalIsEstimate bool
			ByStatus        []statusCount
			ByType          []struct {
				Type       string
				Count      int
				IsEstimate bool
				ByStatus   []statusCount
			}
		}
		statsOf := func(b *bundle, key *string) stats {
			t.Helper()
			var out struct{ WorkflowStats stats }
			b.must(t, `query($k: String) { workflowStats(filter: {businessKey: $k}) { total totalIsEstimate
				byStatus { status count isEstimate } byType { type count isEstimate byStatus { status count isEstimate } } } }`,
				&out, map[string]any{"k": key})
			return out.WorkflowStats
		}
		s := statsOf(small, nil)
		require.Equal(t, estimates, s.TotalIsEstimate)
		require.Len(t, s.ByStatus, 1)
		require.Equal(t, "CREATED", s.ByStatus[0].Status)
		require.Equal(t, store.Kind() == persistence.KindPostgres, s.ByStatus[0].IsEstimate, "CREATED is in no index: estimated on PostgreSQL, grouped exactly on MariaDB")
		require.Len(t, s.ByType, 1)
		require.Equal(t, estimates, s.ByType[0].IsEstimate)
		if !estimates {
			require.Equal(t, 10, s.Total)
		}
		if store.Kind() != persistence.KindPostgres {
			require.Equal(t, 10, s.ByStatus[0].Count)
		}
		s = statsOf(small, ptr("y"))
		require.Equal(t, 2, s.Total)
		require.False(t, s.TotalIsEstimate)
		require.Equal(t, []statusCount{{Status: "CREATED", Count: 2}}, s.ByStatus)
		require.Equal(t, 2, s.ByType[0].Count)
		s = statsOf(exact, nil)
		require.Equal(t, 10, s.Total)
		require.False(t, s.TotalIsEstimate)
		require.Equal(t, []statusCount{{Status: "CREATED", Count: 10}}, s.ByStatus)
		require.Equal(t, []statusCount{{Status: "CREATED", Count: 10}}, s.ByType[0].ByStatus)
	})
}
