package persistence_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// TestAttributeFiltersAgreeWithMatches runs attribute filters in the database and in memory over
// every stored workflow: live subscriptions rely on the two agreeing, on every backend (strings
// byte by byte, including characters beyond the Basic Multilingual Plane).
func TestAttributeFiltersAgreeWithMatches(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		base := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
		strs := []string{"", "a", "ab", "abc", "b", "Z", "é", "eu-west", "eu", "e\U0001F600", "ab\U0010FFFF"}
		nums := []float64{-1.5, 0, 1, 2.25, 1e9}
		var wfs []*persistence.Workflow
		for i := 0; i < 14; i++ {
			wfs = append(wfs, newWorkflow("t", persistence.StatusInProgress, nil))
		}
		require.NoError(t, store.WorkflowInsertMany(ctx, wfs))
		var rows []*persistence.WorkflowAttribute
		for i, w := range wfs {
			if i%5 == 4 {
				continue // no attributes
			}
			rows = append(rows, persistence.NewWorkflowAttribute(w.ID, "s", persistence.AttributeValue{Kind: persistence.AttributeString, S: strs[i%len(strs)]}))
			rows = append(rows, persistence.NewWorkflowAttribute(w.ID, "n", persistence.AttributeValue{Kind: persistence.AttributeNumber, N: nums[i%len(nums)]}))
			if i%2 == 0 {
				rows = append(rows, persistence.NewWorkflowAttribute(w.ID, "b", persistence.AttributeValue{Kind: persistence.AttributeBoolean, B: i%4 == 0}))
				rows = append(rows, persistence.NewWorkflowAttribute(w.ID, "t", persistence.AttributeValue{Kind: persistence.AttributeTime, T: base.Add(time.Duration(i) * time.Hour)}))
			}
		}
		require.NoError(t, store.WorkflowAttributeInsertMany(ctx, rows))
		attrs, err := store.WorkflowAttributeMaps(ctx, []int64{wfs[0].ID, wfs[1].ID})
		require.NoError(t, err)
		require.Equal(t, base, attrs[wfs[0].ID]["t"].T)

		all, _, err := store.WorkflowList(ctx, persistence.WorkflowListParams{Limit: 1000})
		require.NoError(t, err)
		ids := make([]int64, len(all))
		for i, w := range all {
			ids[i] = w.ID
		}
		maps, err := store.WorkflowAttributeMaps(ctx, ids)
		require.NoError(t, err)
		for _, w := range all {
			w.Attributes = maps[w.ID]
		}
		S := func(s string) persistence.AttributeValue {
			return persistence.AttributeValue{Kind: persistence.AttributeString, S: s}
		}
		N := func(n float64) persistence.AttributeValue {
			return persistence.AttributeValue{Kind: persistence.AttributeNumber, N: n}
		}
		T := func(t time.Time) persistence.AttributeValue {
			return persistence.AttributeValue{Kind: persistence.AttributeTime, T: t}
		}
		B := func(b bool) persistence.AttributeValue {
			return persistence.AttributeValue{Kind: persistence.AttributeBoolean, B: b}
		}
		f := func(name string, kind persistence.AttributeKind, op persistence.AttributeOp, vs ...persistence.AttributeValue) persistence.AttributeFilter {
			return persistence.AttributeFilter{Name: name, Kind: kind, Op: op, Values: vs}
		}
		filters := [][]persistence.AttributeFilter{
			{f("s", persistence.AttributeString, persistence.AttributeEq, S("ab"))},
			{f("s", persistence.AttributeString, persistence.AttributeEq, S(""))},
			{f("s", persistence.AttributeString, persistence.AttributePrefix, S("ab"))},
			{f("s", persistence.AttributeString, persistence.AttributePrefix, S("e"))},
			{f("s", persistence.AttributeString, persistence.AttributePrefix, S(""))},
			{f("s", persistence.AttributeString, persistence.AttributeGt, S("b"))},
			{f("s", persistence.AttributeString, persistence.AttributeLt, S("a"))},
			{f("s", persistence.AttributeString, persistence.AttributeGte, S("é"))},
			{f("s", persistence.AttributeString, persistence.AttributeIn, S("Z"), S("eu"), S("nope"))},
			{f("n", persistence.AttributeNumber, persistence.AttributeGt, N(0))},
			{f("n", persistence.AttributeNumber, persistence.AttributeLte, N(1))},
			{f("n", persistence.AttributeNumber, persistence.AttributeEq, N(2.25))},
			{f("b", persistence.AttributeBoolean, persistence.AttributeEq, B(true))},
			{f("b", persistence.AttributeBoolean, persistence.AttributeIn, B(false))},
			{f("t", persistence.AttributeTime, persistence.AttributeGte, T(base.Add(4*time.Hour)))},
			{f("t", persistence.AttributeTime, persistence.AttributeLt, T(base.Add(4*time.Hour).In(time.FixedZone("x", 3600))))},
			{f("t", persistence.AttributeTime, persistence.AttributeEq, T(base))},
			{f("missing", "", persistence.AttributeEq, S("a"))},
			{f("s", persistence.AttributeString, persistence.AttributePrefix, S("a")), f("n", persistence.AttributeNumber, persistence.AttributeGte, N(1))},
		}
		for i, fs := range filters {
			filter := persistence.WorkflowFilter{Attributes: fs}
			page, _, err := store.WorkflowList(ctx, persistence.WorkflowListParams{Filter: filter, Limit: 1000})
			require.NoError(t, err)
			var got, want []int64
			for _, w := range page {
				got = append(got, w.ID)
			}
			for _, w := range all {
				if filter.Matches(w) {
					want = append(want, w.ID)
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			require.Equal(t, want, got, "filter %d: %s", i, fmt.Sprint(fs))
			n, err := store.WorkflowCount(ctx, filter)
			require.NoError(t, err)
			require.Equal(t, len(want), n)
		}
	})
}
