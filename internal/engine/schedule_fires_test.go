package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// One tick fires every due schedule, however many there are (it read 100 a tick: 250 schedules of
// @every 1s fired 50 runs/s, and each waited for the others).
func TestSchedulesFireUntilNothingIsDue(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		const schedules = 250
		var latest time.Time
		created := make([]*persistence.Schedule, schedules)
		for i := range created {
			sc, err := engine.CreateSchedule(ctx, workflow.ScheduleParams{Type: "bench.noop", Cron: "@every 1s", OverlapPolicy: workflow.OverlapAllow})
			require.NoError(t, err)
			created[i] = sc
			if sc.NextFire.After(latest) {
				latest = *sc.NextFire
			}
		}
		// Each schedule's due fire times up to latest, one run each.
		want := 0
		for _, sc := range created {
			want += int(latest.Sub(*sc.NextFire)/time.Second) + 1
		}
		n, err := engine.FireSchedules(ctx, latest)
		require.NoError(t, err)
		require.Equal(t, want, n)
		due, err := store.ScheduleDue(ctx, latest, schedules)
		require.NoError(t, err)
		require.Empty(t, due, "nothing is left due")
		for _, sc := range created {
			got, err := store.ScheduleGet(ctx, sc.ID)
			require.NoError(t, err)
			require.Zero(t, got.SkippedFires)
			require.True(t, got.NextFire.After(latest))
		}
	})
}

// Fire times a node reaches late are made up one run each within ScheduleCatchUp, and skipped and
// counted beyond it; under SKIP, the fire times that find the previous run going are counted too.
func TestScheduleSkippedFiresAreCounted(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		fire := func(at time.Time) int {
			n, err := engine.FireSchedules(ctx, at)
			require.NoError(t, err)
			return n
		}
		get := func(id int64) *persistence.Schedule {
			sc, err := store.ScheduleGet(ctx, id)
			require.NoError(t, err)
			return sc
		}

		allow, err := engine.CreateSchedule(ctx, workflow.ScheduleParams{Type: "bench.noop", Cron: "@every 10s", OverlapPolicy: workflow.OverlapAllow})
		require.NoError(t, err)
		first := *allow.NextFire
		// 30 s behind: the four fire times each start their run.
		require.Equal(t, 4, fire(first.Add(30*time.Second)))
		sc := get(allow.ID)
		require.Zero(t, sc.SkippedFires)
		require.True(t, first.Add(40*time.Second).Equal(*sc.NextFire), "next fire %v", sc.NextFire)
		// Two minutes behind: 13 fire times; the 7 of the last minute run, the 6 before are counted.
		at := sc.NextFire.Add(2 * time.Minute)
		require.Equal(t, 7, fire(at))
		sc = get(allow.ID)
		require.EqualValues(t, 6, sc.SkippedFires)
		require.True(t, at.Equal(*sc.LastFire), "last fire %v", sc.LastFire)

		// A stopped node: an hourly schedule's fire times are all late; one run makes up for them.
		_, err = engine.SetSchedulePaused(ctx, allow.ID, true)
		require.NoError(t, err)
		hourly, err := engine.CreateSchedule(ctx, workflow.ScheduleParams{Type: "bench.noop", Cron: "0 * * * *", OverlapPolicy: workflow.OverlapAllow})
		require.NoError(t, err)
		require.Equal(t, 1, fire(hourly.NextFire.Add(5*time.Hour+30*time.Minute)))
		sc = get(hourly.ID)
		require.EqualValues(t, 5, sc.SkippedFires, "6 fire times, one run")
		require.True(t, hourly.NextFire.Add(5*time.Hour).Equal(*sc.LastFire), "the latest is the one run: %v", sc.LastFire)

		// SKIP: demo.approval waits for a person, so its run is still going at every later fire time.
		_, err = engine.SetSchedulePaused(ctx, hourly.ID, true)
		require.NoError(t, err)
		skip, err := engine.CreateSchedule(ctx, workflow.ScheduleParams{Type: "demo.approval", Cron: "@every 10s"})
		require.NoError(t, err)
		require.Equal(t, 1, fire(*skip.NextFire))
		require.Zero(t, get(skip.ID).SkippedFires)
		require.Zero(t, fire(skip.NextFire.Add(30*time.Second)), "three fire times find the run going")
		require.EqualValues(t, 3, get(skip.ID).SkippedFires)
		runs, err := store.WorkflowCount(ctx, persistence.WorkflowFilter{Types: []string{"demo.approval"}})
		require.NoError(t, err)
		require.Equal(t, 1, runs, fmt.Sprintf("schedule %d", skip.ID))
	})
}
