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

// seedOrdered inserts workflows whose order columns tie and hold NULLs, so keyset pages are tested
// across ties and across the NULL boundary.
func seedOrdered(t *testing.T, store *persistence.Store) []*persistence.Workflow {
	t.Helper()
	base := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	var wfs []*persistence.Workflow
	for i := 0; i < 11; i++ {
		var due *time.Time
		if i%3 != 0 {
			due = ptr(base.Add(time.Duration(i%4) * time.Second))
		}
		st := persistence.StatusInProgress
		if i%2 == 0 {
			st = persistence.StatusFinished
		}
		w := newWorkflow([]string{"a", "b"}[i%2], st, due)
		w.Priority = i % 3
		w.Created = base.Add(time.Duration(i/2) * time.Millisecond) // pairs share a created time
		w.Modified = base.Add(time.Duration(10-i) * time.Microsecond)
		w.BusinessKey = ptr(fmt.Sprintf("bk-%d", i%2))
		wfs = append(wfs, w)
	}
	require.NoError(t, store.WorkflowInsertMany(context.Background(), wfs))
	return wfs
}

// expectedOrder sorts workflows as WorkflowList must: by the column, NULLs last, then ID.
func expectedOrder(wfs []*persistence.Workflow, field persistence.WorkflowOrderField, desc bool) []int64 {
	sorted := slices.Clone(wfs)
	slices.SortStableFunc(sorted, func(a, b *persistence.Workflow) int {
		ka, kb := a.OrderKey(field), b.OrderKey(field)
		if (ka.Value == nil) != (kb.Value == nil) {
			if ka.Value == nil {
				return 1
			}
			return -1
		}
		c := 0
		switch va := ka.Value.(type) {
		case time.Time:
			c = va.Compare(kb.Value.(time.Time))
		case int:
			c = va - kb.Value.(int)
		}
		if c == 0 {
			c = int(ka.ID - kb.ID)
		}
		if desc {
			c = -c
		}
		return c
	})
	ids := make([]int64, len(sorted))
	for i, w := range sorted {
		ids[i] = w.ID
	}
	return ids
}

func TestWorkflowListKeysetPagesEveryOrderBothWays(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		wfs := seedOrdered(t, store)
		fields := []persistence.WorkflowOrderField{persistence.WorkflowOrderCreated, persistence.WorkflowOrderModified,
			persistence.WorkflowOrderNextActivation, persistence.WorkflowOrderPriority}
		for _, field := range fields {
			for _, desc := range []bool{false, true} {
				want := expectedOrder(wfs, field, desc)
				name := fmt.Sprintf("%s desc=%v", field, desc)

				// Forward: first 3 after the last key of the previous page.
				var got []int64
				var after *persistence.WorkflowKey
				for pages := 0; ; pages++ {
					require.Less(t, pages, 10, name)
					page, more, err := store.WorkflowList(ctx, persistence.WorkflowListParams{OrderBy: field, Desc: desc, After: after, Limit: 3})
					require.NoError(t, err, name)
					for _, w := range page {
						got = append(got, w.ID)
					}
					if !more {
						break
					}
					k := page[len(page)-1].OrderKey(field)
					after = &k
				}
				require.Equal(t, want, got, "forward "+name)

				// Backward: last 3 before the first key of the previous page.
				var back []int64
				var before *persistence.WorkflowKey
				for pages := 0; ; pages++ {
					require.Less(t, pages, 10, name)
					page, more, err := store.WorkflowList(ctx, persistence.WorkflowListParams{OrderBy: field, Desc: desc, Before: before, Limit: 3, FromEnd: true})
					require.NoError(t, err, name)
					ids := make([]int64, len(page))
					for i, w := range page {
						ids[i] = w.ID
					}
					back = append(ids, back...)
					if !more {
						break
					}
					k := page[0].OrderKey(field)
					before = &k
				}
				require.Equal(t, want, back, "backward "+name)

				// Both bounds: the rows strictly between the 2nd and the 9th.
				lo, hi := wfs[indexOf(wfs, want[1])].OrderKey(field), wfs[indexOf(wfs, want[8])].OrderKey(field)
				page, more, err := store.WorkflowList(ctx, persistence.WorkflowListParams{OrderBy: field, Desc: desc, After: &lo, Before: &hi, Limit: 100})
				require.NoError(t, err)
				require.False(t, more)
				require.Equal(t, want[2:8], idsOf(page), "between "+name)
			}
		}
	})
}

func indexOf(wfs []*persistence.Workflow, id int64) int {
	return slices.IndexFunc(wfs, func(w *persistence.Workflow) bool { return w.ID == id })
}

func idsOf(wfs []*persistence.Workflow) []int64 {
	out := make([]int64, len(wfs))
	for i, w := range wfs {
		out[i] = w.ID
	}
	return out
}

func TestWorkflowFilterCountStatsHeldBy(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		wfs := seedOrdered(t, store)
		list := func(f persistence.WorkflowFilter) []int64 {
			page, _, err := store.WorkflowList(ctx, persistence.WorkflowListParams{Filter: f, Limit: 100})
			require.NoError(t, err)
			n, err := store.WorkflowCount(ctx, f)
			require.NoError(t, err)
			require.Len(t, page, n, "count agrees with the list")
			return idsOf(page)
		}
		require.Len(t, list(persistence.WorkflowFilter{}), 11)
		require.Len(t, list(persistence.WorkflowFilter{Types: []string{"a"}}), 6)
		require.Len(t, list(persistence.WorkflowFilter{Types: []string{"a"}, Statuses: []persistence.Status{persistence.StatusInProgress}}), 0)
		require.Len(t, list(persistence.WorkflowFilter{BusinessKey: ptr("bk-1")}), 5)
		require.Equal(t, []int64{wfs[3].ID, wfs[5].ID}, list(persistence.WorkflowFilter{IDs: []int64{wfs[5].ID, wfs[3].ID}}))
		require.Len(t, list(persistence.WorkflowFilter{CreatedAfter: &wfs[1].Created, CreatedBefore: &wfs[8].Created}), 6, "created strictly between (pairs share a time)")
		require.Len(t, list(persistence.WorkflowFilter{ExecutorGroup: ptr("other")}), 0)
		require.Len(t, list(persistence.WorkflowFilter{States: []string{"start"}}), 11)

		child := newWorkflow("a", persistence.StatusCreated, nil)
		child.ParentID, child.RootID, child.ExternalID = &wfs[0].ID, &wfs[0].ID, ptr("ext-1")
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{child}))
		require.Equal(t, []int64{child.ID}, list(persistence.WorkflowFilter{ParentID: &wfs[0].ID}))
		require.Equal(t, []int64{child.ID}, list(persistence.WorkflowFilter{RootID: &wfs[0].ID}))
		require.Equal(t, []int64{child.ID}, list(persistence.WorkflowFilter{ExternalID: ptr("ext-1")}))

		stats, err := store.WorkflowStats(ctx, persistence.WorkflowFilter{})
		require.NoError(t, err)
		require.Equal(t, []persistence.WorkflowStatRow{
			{Type: "a", Status: persistence.StatusCreated, Count: 1},
			{Type: "a", Status: persistence.StatusFinished, Count: 6},
			{Type: "b", Status: persistence.StatusInProgress, Count: 5},
		}, stats)

		exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Minute})
		require.NoError(t, err)
		claimed, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: 2,
			Now: time.Now().Add(time.Hour * 24 * 365 * 10), StepDeadline: time.Now().Add(time.Hour), Types: []string{"a", "b"}})
		require.NoError(t, err)
		require.Len(t, claimed, 2)
		held, err := store.WorkflowHeldBy(ctx, []int64{exec.ID, exec.ID + 1})
		require.NoError(t, err)
		require.ElementsMatch(t, idsOf(claimed), idsOf(held))
		require.ElementsMatch(t, idsOf(claimed), list(persistence.WorkflowFilter{ExecutorIDs: []int64{exec.ID}}))

		_, _, err = store.WorkflowList(ctx, persistence.WorkflowListParams{Limit: 0})
		require.Error(t, err)
		_, _, err = store.WorkflowList(ctx, persistence.WorkflowListParams{Limit: 1, OrderBy: "id; DROP TABLE workflows"})
		require.Error(t, err)
	})
}

func TestActionAndDefinitionGetMany(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		w := newWorkflow("a", persistence.StatusCreated, nil)
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{w}))
		actions := []*persistence.Action{
			{WorkflowID: w.ID, Type: persistence.ActionStateExecution, State: "s1"},
			{WorkflowID: w.ID, Type: persistence.ActionExternalChange, State: "s2"},
		}
		require.NoError(t, store.ActionInsertMany(ctx, actions))
		got, err := store.ActionGetMany(ctx, []int64{actions[1].ID, actions[0].ID, 999999})
		require.NoError(t, err)
		require.Len(t, got, 2)
		require.Equal(t, "s1", got[0].State)

		def, _, err := store.DefinitionSave(ctx, persistence.DefinitionSaveParams{Type: "a", Checksum: "c1", Spec: []byte(`{}`), ExecutorGroup: "default"})
		require.NoError(t, err)
		defs, err := store.DefinitionGetByIDs(ctx, []int64{def.ID})
		require.NoError(t, err)
		require.Len(t, defs, 1)
		require.Equal(t, "a", defs[0].Type)
		none, err := store.DefinitionGetByIDs(ctx, nil)
		require.NoError(t, err)
		require.Empty(t, none)
	})
}
