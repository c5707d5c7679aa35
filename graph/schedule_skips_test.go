package graph_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// Schedule.skippedFires shows the fire times that started no run.
func TestScheduleShowsSkippedFires(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		ctx := context.Background()
		sc, err := b.engine.CreateSchedule(ctx, workflow.ScheduleParams{Type: "test.flow", Cron: "@every 5s"})
		require.NoError(t, err)
		// The first fire starts a run; no worker runs it, so under SKIP the next two find it going.
		_, err = b.engine.FireSchedules(ctx, *sc.NextFire)
		require.NoError(t, err)
		_, err = b.engine.FireSchedules(ctx, sc.NextFire.Add(10*time.Second))
		require.NoError(t, err)
		var out struct {
			Schedules []struct {
				ID           string
				SkippedFires int
			}
		}
		b.must(t, `{ schedules { id skippedFires } }`, &out, nil)
		require.Len(t, out.Schedules, 1)
		require.Equal(t, 2, out.Schedules[0].SkippedFires)
	})
}
