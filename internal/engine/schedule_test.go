package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

func TestSchedules(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		for field, p := range map[string]workflow.ScheduleParams{
			"type":          {Type: "nope", Cron: "* * * * *"},
			"cron":          {Type: "demo.order", Cron: "every tuesday"},
			"timezone":      {Type: "demo.order", Cron: "* * * * *", Timezone: "Mars/Olympus"},
			"input":         {Type: "demo.order", Cron: "* * * * *", Input: []byte(`[1]`)},
			"overlapPolicy": {Type: "demo.order", Cron: "* * * * *", OverlapPolicy: "QUEUE"},
		} {
			_, err := engine.CreateSchedule(ctx, p)
			requireCode(t, err, workflow.CodeInvalidInput, field)
		}
		list, err := store.ScheduleList(ctx)
		require.NoError(t, err)
		require.Empty(t, list, "refused schedules are not stored")

		sc, err := engine.CreateSchedule(ctx, workflow.ScheduleParams{Type: "demo.approval", Cron: "*/5 * * * *", Timezone: "Europe/Kyiv",
			Input: json.RawMessage(`{"from": "schedule"}`)})
		require.NoError(t, err)
		require.NotNil(t, sc.NextFire)
		require.Zero(t, sc.NextFire.Minute()%5)
		require.Zero(t, sc.NextFire.Second())

		// Nothing is due yet.
		n, err := engine.FireSchedules(ctx, persistence.Now())
		require.NoError(t, err)
		require.Zero(t, n)

		// At the fire time one run starts, however many nodes fire at once.
		at := *sc.NextFire
		for range 3 {
			_, err := engine.FireSchedules(ctx, at)
			require.NoError(t, err)
		}
		got, err := store.ScheduleGet(ctx, sc.ID)
		require.NoError(t, err)
		require.True(t, at.Equal(*got.LastFire), "last fire %v", got.LastFire)
		require.True(t, at.Add(5*time.Minute).Equal(*got.NextFire), "next fire %v", got.NextFire)
		runs, _, err := store.WorkflowList(ctx, persistence.WorkflowListParams{Filter: persistence.WorkflowFilter{Types: []string{"demo.approval"}}, Limit: 10})
		require.NoError(t, err)
		require.Len(t, runs, 1)
		require.JSONEq(t, `{"from": "schedule"}`, string(runs[0].Input))

		// The run has not ended: with SKIP, the next fire starts nothing but still moves on.
		n, err = engine.FireSchedules(ctx, at.Add(5*time.Minute))
		require.NoError(t, err)
		require.Zero(t, n)
		got, err = store.ScheduleGet(ctx, sc.ID)
		require.NoError(t, err)
		require.True(t, at.Add(10*time.Minute).Equal(*got.NextFire), "next fire %v", got.NextFire)

		paused, err := engine.SetSchedulePaused(ctx, sc.ID, true)
		require.NoError(t, err)
		require.True(t, paused.Paused)
		n, err = engine.FireSchedules(ctx, at.Add(time.Hour))
		require.NoError(t, err)
		require.Zero(t, n, "a paused schedule does not fire")
		_, err = engine.SetSchedulePaused(ctx, 424242, true)
		requireCode(t, err, workflow.CodeNotFound, "id")

		// ALLOW starts overlapping runs; an end time stops the schedule.
		end := persistence.Now().Add(90 * time.Second)
		allow, err := engine.CreateSchedule(ctx, workflow.ScheduleParams{Type: "demo.approval", Cron: "@every 30s", OverlapPolicy: "allow", EndAt: &end})
		require.NoError(t, err)
		fires := 0
		for next := allow.NextFire; next != nil; {
			n, err := engine.FireSchedules(ctx, *next)
			require.NoError(t, err)
			fires += n
			s, err := store.ScheduleGet(ctx, allow.ID)
			require.NoError(t, err)
			next = s.NextFire
		}
		require.Equal(t, 3, fires)
	})
}

func TestScheduleBackfill(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		sc, err := engine.CreateSchedule(ctx, workflow.ScheduleParams{Type: "bench.noop", Cron: "0 * * * *"})
		require.NoError(t, err)
		from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		runs, err := engine.BackfillSchedule(ctx, sc.ID, from, from.Add(5*time.Hour))
		require.NoError(t, err)
		require.Len(t, runs, 6, "00:00 to 05:00 inclusive")
		for _, r := range runs {
			require.True(t, r.Created)
		}
		again, err := engine.BackfillSchedule(ctx, sc.ID, from.Add(3*time.Hour), from.Add(7*time.Hour))
		require.NoError(t, err)
		created := 0
		for _, r := range again {
			if r.Created {
				created++
			}
		}
		require.Len(t, again, 5)
		require.Equal(t, 2, created, "hours already backfilled start nothing again")

		_, err = engine.BackfillSchedule(ctx, sc.ID, from, from.Add(2000*time.Hour))
		requireCode(t, err, workflow.CodeInvalidInput, "to")
		_, err = engine.BackfillSchedule(ctx, sc.ID, from, from)
		requireCode(t, err, workflow.CodeInvalidInput, "to")
		_, err = engine.BackfillSchedule(ctx, 987654, from, from.Add(time.Hour))
		requireCode(t, err, workflow.CodeNotFound, "id")
		n, err := store.WorkflowCount(ctx, persistence.WorkflowFilter{Types: []string{"bench.noop"}})
		require.NoError(t, err)
		require.Equal(t, 8, n)
	})
}

func TestScheduleRefusals(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		past := persistence.Now().Add(-time.Hour)
		cases := []struct {
			name  string
			p     workflow.ScheduleParams
			field string
		}{
			{"zero interval", workflow.ScheduleParams{Cron: "@every 0s"}, "cron"},
			{"millisecond", workflow.ScheduleParams{Cron: "@every 1ms"}, "cron"},
			{"nanosecond", workflow.ScheduleParams{Cron: "@every 1ns"}, "cron"},
			{"negative", workflow.ScheduleParams{Cron: "@every -1m"}, "cron"},
			{"fraction of a second", workflow.ScheduleParams{Cron: "@every 1500ms"}, "cron"},
			{"never fires", workflow.ScheduleParams{Cron: "0 0 30 2 *"}, "cron"},
			{"TZ in the spec", workflow.ScheduleParams{Cron: "TZ=Asia/Tokyo 0 9 * * *", Timezone: "Europe/Berlin"}, "cron"},
			{"CRON_TZ in the spec", workflow.ScheduleParams{Cron: "CRON_TZ=Asia/Tokyo 0 9 * * *"}, "cron"},
			{"Local", workflow.ScheduleParams{Cron: "@daily", Timezone: "Local"}, "timezone"},
			{"ended", workflow.ScheduleParams{Cron: "@daily", EndAt: &past}, "endAt"},
		}
		for _, c := range cases {
			c.p.Type = "demo.order"
			_, err := engine.CreateSchedule(ctx, c.p)
			requireCode(t, err, workflow.CodeInvalidInput, c.field)
		}
		list, err := store.ScheduleList(ctx)
		require.NoError(t, err)
		require.Empty(t, list, "refused schedules are not stored")

		sc, err := engine.CreateSchedule(ctx, workflow.ScheduleParams{Type: "demo.order", Cron: "@every 1s"})
		require.NoError(t, err, "the minimum interval is accepted")
		require.NotNil(t, sc.NextFire)

		// A paused schedule has no next fire; resumed, it has one again.
		paused, err := engine.SetSchedulePaused(ctx, sc.ID, true)
		require.NoError(t, err)
		require.Nil(t, paused.NextFire)
		stored, err := store.ScheduleGet(ctx, sc.ID)
		require.NoError(t, err)
		require.Nil(t, stored.NextFire)
		resumed, err := engine.SetSchedulePaused(ctx, sc.ID, false)
		require.NoError(t, err)
		require.NotNil(t, resumed.NextFire)

		// Backfill reaching into the future is refused and starts nothing.
		hourly, err := engine.CreateSchedule(ctx, workflow.ScheduleParams{Type: "bench.noop", Cron: "0 * * * *"})
		require.NoError(t, err)
		now := time.Now()
		_, err = engine.BackfillSchedule(ctx, hourly.ID, now.Add(-3*time.Hour), now.Add(3*time.Hour))
		requireCode(t, err, workflow.CodeInvalidInput, "to")
		_, err = engine.BackfillSchedule(ctx, hourly.ID, now.Add(time.Hour), now.Add(3*time.Hour))
		requireCode(t, err, workflow.CodeInvalidInput, "to")
		n, err := store.WorkflowCount(ctx, persistence.WorkflowFilter{Types: []string{"bench.noop"}})
		require.NoError(t, err)
		require.Zero(t, n)
	})
}
