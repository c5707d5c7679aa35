package persistence_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// TestWorkflowFilterMatchesAgreesWithSQL runs each filter both ways, in the database (WorkflowList)
// and in memory (Matches) over every stored row: live subscriptions rely on the two agreeing.
func TestWorkflowFilterMatchesAgreesWithSQL(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		wfs := seedOrdered(t, store)
		child := newWorkflow("a", persistence.StatusCreated, nil)
		child.ParentID, child.RootID, child.ExternalID = &wfs[0].ID, &wfs[0].ID, ptr("ext-1")
		child.Created = wfs[4].Created.Add(time.Nanosecond) // stored truncated to the microsecond
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{child}))
		exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Minute})
		require.NoError(t, err)
		_, err = store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: 2,
			Now: time.Now().Add(time.Hour * 24 * 365 * 10), StepDeadline: time.Now().Add(time.Hour), Types: []string{"a", "b"}})
		require.NoError(t, err)

		all, _, err := store.WorkflowList(ctx, persistence.WorkflowListParams{Limit: 1000})
		require.NoError(t, err)
		require.Len(t, all, 12)
		inLocal := wfs[3].Created.In(time.FixedZone("east", 5*3600))
		filters := map[string]persistence.WorkflowFilter{
			"none":                           {},
			"ids":                            {IDs: []int64{wfs[5].ID, wfs[3].ID, 999999}},
			"types":                          {Types: []string{"a"}},
			"types and status":               {Types: []string{"a"}, Statuses: []persistence.Status{persistence.StatusInProgress}},
			"statuses":                       {Statuses: []persistence.Status{persistence.StatusFinished, persistence.StatusCreated}},
			"states":                         {States: []string{"start"}},
			"no such state":                  {States: []string{"nope"}},
			"business key":                   {BusinessKey: ptr("bk-1")},
			"external id":                    {ExternalID: ptr("ext-1")},
			"empty external id":              {ExternalID: ptr("")},
			"parent":                         {ParentID: &wfs[0].ID},
			"root":                           {RootID: &wfs[0].ID},
			"top level":                      {TopLevel: ptr(true)},
			"children":                       {TopLevel: ptr(false)},
			"top level of a type":            {TopLevel: ptr(true), Types: []string{"a"}},
			"group":                          {ExecutorGroup: ptr("default")},
			"other group":                    {ExecutorGroup: ptr("other")},
			"executor":                       {ExecutorIDs: []int64{exec.ID}},
			"created between":                {CreatedAfter: &wfs[1].Created, CreatedBefore: &wfs[8].Created},
			"created after, in another zone": {CreatedAfter: &inLocal},
			"created after, nanoseconds":     {CreatedAfter: ptr(wfs[4].Created.Add(500 * time.Nanosecond))},
			"created before, nanoseconds":    {CreatedBefore: ptr(wfs[4].Created.Add(500 * time.Nanosecond))},
		}
		for name, f := range filters {
			page, _, err := store.WorkflowList(ctx, persistence.WorkflowListParams{Filter: f, Limit: 1000})
			require.NoError(t, err)
			var inMemory []int64
			for _, w := range all {
				if f.Matches(w) {
					inMemory = append(inMemory, w.ID)
				}
			}
			require.ElementsMatch(t, idsOf(page), inMemory, name)
		}
		require.False(t, persistence.WorkflowFilter{}.Matches(nil))
	})
}
