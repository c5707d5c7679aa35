package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

type scheduleOut struct {
	ID, Cron, Timezone, OverlapPolicy string
	Name                              *string
	Priority                          int
	NextFire                          *string
	Input                             map[string]any
}

func TestScheduleNamesUpdateAndDelete(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		const fields = `id name cron timezone overlapPolicy priority nextFire input`
		var made struct {
			CreateSchedule struct{ Schedule scheduleOut }
		}
		b.must(t, `mutation { createSchedule(input: {type: "test.flow", cron: "0 9 * * *", name: "morning"}) { schedule { `+fields+` } } }`, &made, nil)
		sc := made.CreateSchedule.Schedule
		require.Equal(t, "morning", *sc.Name)
		e := b.fails(t, "CONFLICT", `mutation { createSchedule(input: {type: "test.flow", cron: "@daily", name: "morning"}) { schedule { id } } }`, nil)
		require.Equal(t, "name", e.Extensions["field"])
		e = b.fails(t, "INVALID_INPUT", `mutation { createSchedule(input: {type: "test.flow", cron: "@daily", name: ""}) { schedule { id } } }`, nil)
		require.Equal(t, "name", e.Extensions["field"])
		b.must(t, `mutation { createSchedule(input: {type: "test.flow", cron: "@hourly"}) { schedule { id } } }`, &made, nil)
		other := made.CreateSchedule.Schedule.ID

		// Lookup by exactly one of id and name.
		var got struct{ Schedule *scheduleOut }
		b.must(t, `query($n: String) { schedule(name: $n) { `+fields+` } }`, &got, map[string]any{"n": "morning"})
		require.Equal(t, sc.ID, got.Schedule.ID)
		b.must(t, `query($id: ID) { schedule(id: $id) { `+fields+` } }`, &got, map[string]any{"id": sc.ID})
		require.Equal(t, "0 9 * * *", got.Schedule.Cron)
		var none struct{ Schedule *scheduleOut }
		b.must(t, `{ schedule(name: "nope") { id } }`, &none, nil)
		require.Nil(t, none.Schedule)
		for _, q := range []string{`{ schedule { id } }`, `query($id: ID) { schedule(id: $id, name: "morning") { id } }`} {
			e = b.fails(t, "INVALID_INPUT", q, map[string]any{"id": sc.ID})
			require.Equal(t, "id", e.Extensions["field"])
		}

		// Bad updates change nothing.
		const update = `mutation($in: UpdateScheduleInput!) { updateSchedule(input: $in) { schedule { ` + fields + ` } } }`
		for field, in := range map[string]map[string]any{
			"cron":     {"id": sc.ID, "cron": "61 * * * *"},
			"timezone": {"id": sc.ID, "timezone": "Mars/Olympus"},
			"endAt":    {"id": sc.ID, "startAt": "2030-01-02T00:00:00Z", "endAt": "2030-01-01T00:00:00Z"},
			"id":       {"id": "nonsense"},
		} {
			e = b.fails(t, "INVALID_INPUT", update, map[string]any{"in": in})
			require.Equal(t, field, e.Extensions["field"], "%v", in)
		}
		b.must(t, `query($id: ID) { schedule(id: $id) { `+fields+` } }`, &got, map[string]any{"id": sc.ID})
		require.Equal(t, sc, *got.Schedule, "a refused update changes nothing")

		// A good one changes only the fields given and computes the next fire again.
		var upd struct {
			UpdateSchedule struct{ Schedule scheduleOut }
		}
		b.must(t, update, &upd, map[string]any{"in": map[string]any{"id": sc.ID, "cron": "30 18 * * *", "timezone": "Asia/Tokyo",
			"priority": 5, "input": map[string]any{"k": "v"}, "overlapPolicy": "ALLOW"}})
		now := upd.UpdateSchedule.Schedule
		require.Equal(t, "30 18 * * *", now.Cron)
		require.Equal(t, "Asia/Tokyo", now.Timezone)
		require.Equal(t, 5, now.Priority)
		require.Equal(t, "ALLOW", now.OverlapPolicy)
		require.Equal(t, map[string]any{"k": "v"}, now.Input)
		require.Equal(t, "morning", *now.Name)
		require.NotEqual(t, sc.NextFire, now.NextFire)
		require.Contains(t, *now.NextFire, "09:30:00Z", "18:30 in Tokyo is 09:30 UTC")

		// Delete: gone; a second delete is NOT_FOUND; the other schedule stays.
		var del struct{ DeleteSchedule struct{ Deleted bool } }
		b.must(t, `mutation($id: ID!) { deleteSchedule(input: {id: $id}) { deleted } }`, &del, map[string]any{"id": sc.ID})
		require.True(t, del.DeleteSchedule.Deleted)
		b.fails(t, "NOT_FOUND", `mutation($id: ID!) { deleteSchedule(input: {id: $id}) { deleted } }`, map[string]any{"id": sc.ID})
		var gone struct{ Schedule *scheduleOut }
		b.must(t, `{ schedule(name: "morning") { id } }`, &gone, nil)
		require.Nil(t, gone.Schedule)
		list, err := store.ScheduleList(context.Background())
		require.NoError(t, err)
		require.Len(t, list, 1)
		b.must(t, `query($id: ID) { schedule(id: $id) { id } }`, &got, map[string]any{"id": other})
		require.NotNil(t, got.Schedule)

		// Each change is in the audit log, written with it.
		entries, err := store.AuditList(context.Background(), persistence.AuditListParams{Limit: 100})
		require.NoError(t, err)
		var acts []string
		for _, e := range entries {
			acts = append(acts, e.Action)
		}
		require.Equal(t, []string{"deleteSchedule", "updateSchedule", "createSchedule", "createSchedule"}, acts)
	})
}
