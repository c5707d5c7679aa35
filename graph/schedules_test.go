package graph_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

func TestSchedulesOverGraphQL(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		const create = `mutation($in: CreateScheduleInput!) { createSchedule(input: $in) { schedule { id type cron timezone paused overlapPolicy nextFire input } } }`
		e := b.fails(t, "INVALID_INPUT", create, map[string]any{"in": map[string]any{"type": "test.flow", "cron": "61 * * * *"}})
		require.Equal(t, "cron", e.Extensions["field"])
		e = b.fails(t, "INVALID_INPUT", create, map[string]any{"in": map[string]any{"type": "nope", "cron": "@daily"}})
		require.Equal(t, "type", e.Extensions["field"])
		for _, in := range []map[string]any{
			{"type": "test.flow", "cron": "@every 0s"},
			{"type": "test.flow", "cron": "@every -1m"},
			{"type": "test.flow", "cron": "0 0 30 2 *"},
			{"type": "test.flow", "cron": "TZ=Asia/Tokyo 0 9 * * *", "timezone": "Europe/Berlin"},
			{"type": "test.flow", "cron": "@daily", "timezone": "Local"},
		} {
			e = b.fails(t, "INVALID_INPUT", create, map[string]any{"in": in})
			field := "cron"
			if in["timezone"] == "Local" {
				field = "timezone"
			}
			require.Equal(t, field, e.Extensions["field"], "%v", in)
		}

		var out struct {
			CreateSchedule struct {
				Schedule struct {
					ID, Type, Cron, Timezone, OverlapPolicy string
					Paused                                  bool
					NextFire                                *string
					Input                                   map[string]any
				}
			}
		}
		b.must(t, create, &out, map[string]any{"in": map[string]any{"type": "test.flow", "cron": "0 9 * * 1-5", "timezone": "America/New_York",
			"input": map[string]any{"batch": 1}, "overlapPolicy": "ALLOW"}})
		sc := out.CreateSchedule.Schedule
		require.Equal(t, "test.flow", sc.Type)
		require.Equal(t, "America/New_York", sc.Timezone)
		require.Equal(t, "ALLOW", sc.OverlapPolicy)
		require.NotNil(t, sc.NextFire)
		require.Equal(t, map[string]any{"batch": float64(1)}, sc.Input)

		var paused struct {
			SetSchedulePaused struct{ Schedule struct{ Paused bool } }
		}
		b.must(t, `mutation($id: ID!) { setSchedulePaused(input: {id: $id, paused: true}) { schedule { paused } } }`, &paused, map[string]any{"id": sc.ID})
		require.True(t, paused.SetSchedulePaused.Schedule.Paused)
		var list struct {
			Schedules []struct {
				ID       string
				Paused   bool
				NextFire *string
			}
		}
		b.must(t, `{ schedules { id paused nextFire } }`, &list, nil)
		require.Len(t, list.Schedules, 1)
		require.True(t, list.Schedules[0].Paused)
		require.Nil(t, list.Schedules[0].NextFire, "a paused schedule fires no more")
		b.fails(t, "INVALID_INPUT", `mutation { setSchedulePaused(input: {id: "nonsense", paused: true}) { schedule { id } } }`, nil)
	})
}

func TestBackfillOverGraphQL(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		var out struct {
			CreateSchedule struct{ Schedule struct{ ID string } }
		}
		b.must(t, `mutation { createSchedule(input: {type: "test.flow", cron: "@daily"}) { schedule { id } } }`, &out, nil)
		id := out.CreateSchedule.Schedule.ID
		const backfill = `mutation($id: ID!, $from: Time!, $to: Time!) { backfillSchedule(input: {id: $id, from: $from, to: $to}) { created workflows { id type status } } }`
		var got struct {
			BackfillSchedule struct {
				Created   int
				Workflows []struct{ ID, Type, Status string }
			}
		}
		vars := map[string]any{"id": id, "from": "2026-01-01T00:00:00Z", "to": "2026-01-03T00:00:00Z"}
		b.must(t, backfill, &got, vars)
		require.Equal(t, 3, got.BackfillSchedule.Created)
		require.Len(t, got.BackfillSchedule.Workflows, 3)
		require.Equal(t, "test.flow", got.BackfillSchedule.Workflows[0].Type)
		b.must(t, backfill, &got, vars)
		require.Zero(t, got.BackfillSchedule.Created, "a second backfill of the same range starts nothing")
		e := b.fails(t, "INVALID_INPUT", backfill, map[string]any{"id": id, "from": "2026-01-03T00:00:00Z", "to": "2026-01-01T00:00:00Z"})
		require.Equal(t, "to", e.Extensions["field"])
		e = b.fails(t, "INVALID_INPUT", backfill, map[string]any{"id": id, "from": "2026-01-03T00:00:00Z", "to": "2999-01-01T00:00:00Z"})
		require.Equal(t, "to", e.Extensions["field"], "a range reaching into the future")
	})
}
