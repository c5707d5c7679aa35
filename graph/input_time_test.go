package graph_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// A time outside the years 0001 to 9999 (in UTC, after its offset) is refused wherever a time comes
// in, naming the field; the extremes inside are stored, sorted and read back on both backends, and
// claims go on working.
func TestTimesOutsideYears1To9999AreRefused(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		start := `mutation($in: StartWorkflowInput!) { startWorkflow(input: $in) { workflow { id } } }`
		for _, bad := range []string{
			"9999-12-31T23:59:59-23:59", // 10000-01-01T23:58:59Z
			"10000-01-01T00:00:00Z",
			"0000-12-31T23:59:59Z",
			"0001-01-01T00:30:00+01:00", // 0000-12-31T23:30:00Z
			"yesterday",
		} {
			e := b.fails(t, "INVALID_INPUT", start, map[string]any{"in": map[string]any{"type": "test.flow", "startAt": bad}})
			require.Equal(t, "startAt", e.Extensions["field"], bad)
		}
		e := b.fails(t, "INVALID_INPUT", `mutation { startWorkflow(input: {type: "test.flow", startAt: "9999-12-31T23:59:59-23:59"}) { workflow { id } } }`, nil)
		require.Equal(t, "startAt", e.Extensions["field"], "a literal is checked as a variable is")
		e = b.fails(t, "INVALID_INPUT", `mutation($in: StartWorkflowsInput!) { startWorkflows(input: $in) { results { created } } }`,
			map[string]any{"in": map[string]any{"workflows": []any{
				map[string]any{"type": "test.flow"}, map[string]any{"type": "test.flow", "startAt": "0000-01-01T00:00:00Z"}}}})
		require.Equal(t, "workflows[1].startAt", e.Extensions["field"])

		schedule := `mutation($in: CreateScheduleInput!) { createSchedule(input: $in) { schedule { id } } }`
		for _, field := range []string{"startAt", "endAt"} {
			e = b.fails(t, "INVALID_INPUT", schedule, map[string]any{"in": map[string]any{"type": "test.flow", "cron": "@daily",
				field: "9999-12-31T23:59:59-23:59"}})
			require.Equal(t, field, e.Extensions["field"])
		}
		e = b.fails(t, "INVALID_INPUT", `query($f: WorkflowFilter) { workflows(filter: $f) { totalCount } }`,
			map[string]any{"f": map[string]any{"createdBefore": "0000-06-01T00:00:00Z"}})
		require.Equal(t, "filter.createdBefore", e.Extensions["field"])

		id := b.start(t, nil)
		e = b.fails(t, "INVALID_INPUT", `mutation($id: ID!) { updateWorkflow(input: {id: $id, nextActivation: "9999-12-31T23:59:59-00:01"}) { workflow { id } } }`,
			map[string]any{"id": id})
		require.Equal(t, "nextActivation", e.Extensions["field"])

		var sc struct {
			CreateSchedule struct{ Schedule struct{ ID string } }
		}
		b.must(t, schedule, &sc, map[string]any{"in": map[string]any{"type": "test.flow", "cron": "@daily"}})
		e = b.fails(t, "INVALID_INPUT", `mutation($id: ID!) { backfillSchedule(input: {id: $id, from: "0000-01-01T00:00:00Z", to: "2020-01-01T00:00:00Z"}) { created } }`,
			map[string]any{"id": sc.CreateSchedule.Schedule.ID})
		require.Equal(t, "from", e.Extensions["field"])

		n, err := store.WorkflowCount(t.Context(), persistence.WorkflowFilter{})
		require.NoError(t, err)
		require.Equal(t, 1, n, "nothing refused was started")

		// The extremes are stored exactly, sort as times, and leave claims working.
		b.start(t, map[string]any{"startAt": "9999-12-31T23:59:59.999999Z", "externalId": "last"})
		b.start(t, map[string]any{"startAt": "0001-01-01T00:00:00Z", "externalId": "first"})
		var list struct {
			Workflows struct {
				Nodes []struct {
					ExternalID     *string
					NextActivation string
				}
			}
		}
		b.must(t, `{ workflows(orderBy: {field: NEXT_ACTIVATION, direction: ASC}) { nodes { externalId nextActivation } } }`, &list, nil)
		require.Len(t, list.Workflows.Nodes, 3)
		require.Equal(t, "0001-01-01T00:00:00Z", list.Workflows.Nodes[0].NextActivation)
		require.Nil(t, list.Workflows.Nodes[1].ExternalID)
		require.Equal(t, "9999-12-31T23:59:59.999999Z", list.Workflows.Nodes[2].NextActivation)

		exec, err := store.ExecutorRegister(t.Context(), persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Minute})
		require.NoError(t, err)
		now := persistence.Now()
		claimed, err := store.WorkflowClaim(t.Context(), persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: 10,
			Now: now, StepDeadline: now.Add(time.Minute), Types: []string{"test.flow"}})
		require.NoError(t, err)
		require.Len(t, claimed, 2, "the workflows due now are claimed; the one due in 9999 is not")
	})
}
