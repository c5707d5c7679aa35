package persistence_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// Every time the operations accept (years 0001 to 9999 in UTC, to the microsecond) is stored
// exactly and read back, and sorts as a time: on SQLite times are text, and the claim and every
// list order by it.
func TestTimesOfEveryAcceptedYearStoreAndSort(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		now := persistence.Now()
		times := []time.Time{ // in time order
			time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
			time.Date(1, 1, 1, 0, 0, 0, 1000, time.UTC),
			time.Date(999, 12, 31, 23, 59, 59, 500000000, time.UTC),
			time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC),
			time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
			time.Date(2000, 1, 1, 0, 0, 0, 90000000, time.UTC),
			time.Date(2000, 1, 1, 0, 0, 0, 100000000, time.UTC),
			now.Add(-time.Second),
			now.Add(time.Hour),
			time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
			time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC),
		}
		var wfs []*persistence.Workflow
		for i := len(times) - 1; i >= 0; i-- { // inserted in reverse, so IDs do not give the order away
			due := times[i]
			wfs = append(wfs, newWorkflow("t", persistence.StatusInProgress, &due))
		}
		require.NoError(t, store.WorkflowInsertMany(ctx, wfs))

		listed, _, err := store.WorkflowList(ctx, persistence.WorkflowListParams{OrderBy: persistence.WorkflowOrderNextActivation, Limit: 100})
		require.NoError(t, err)
		require.Len(t, listed, len(times))
		for i, w := range listed {
			require.True(t, times[i].Equal(*w.NextActivation), "position %d: want %s, got %s", i, times[i], w.NextActivation)
		}

		exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Minute})
		require.NoError(t, err)
		claim := func(limit int) []time.Time {
			claimed, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: limit,
				Now: now, StepDeadline: now.Add(time.Minute), Types: []string{"t"}})
			require.NoError(t, err)
			got := make([]time.Time, len(claimed))
			for i, w := range claimed {
				got[i] = *w.NextActivation
			}
			slices.SortFunc(got, time.Time.Compare) // RETURNING gives no order
			return got
		}
		first := claim(3)
		require.Len(t, first, 3)
		for i := range first {
			require.True(t, times[i].Equal(first[i]), "the earliest are claimed first: position %d: want %s, got %s", i, times[i], first[i])
		}
		rest := claim(100)
		require.Len(t, rest, 5, "then the others due by now, and none due later")
		for i := range rest {
			require.True(t, times[3+i].Equal(rest[i]), "position %d: want %s, got %s", 3+i, times[3+i], rest[i])
		}
	})
}

// On SQLite, a time outside the years 0001 to 9999 is never written: it would sort before today's
// times and fail to parse, stopping every claim for good. The write fails instead, and the store
// goes on working.
func TestSQLiteRefusesToStoreTimesItCannotSort(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := dbtest.Open(t, persistence.KindSQLite)
	for _, bad := range []time.Time{
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.FixedZone("", -(23*3600+59*60))), // 10000-01-01 in UTC
		time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC),
	} {
		err := store.WorkflowInsertMany(ctx, []*persistence.Workflow{newWorkflow("t", persistence.StatusInProgress, &bad)})
		require.Error(t, err, bad)
	}
	now := persistence.Now()
	due := now.Add(-time.Second)
	require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{newWorkflow("t", persistence.StatusInProgress, &due)}))
	exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Minute})
	require.NoError(t, err)
	claimed, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: 10,
		Now: now, StepDeadline: now.Add(time.Minute), Types: []string{"t"}})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	n, err := store.WorkflowCount(ctx, persistence.WorkflowFilter{})
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

// Databases written before times were bounded may hold times past the year 9999 (on SQLite as
// text that stops every claim). The migration moves each to the last instant cairn accepts (the
// first, for times before the year 0001) and drops fire times that never come; then everything
// reads and claims again.
func TestMigrationMovesTimesBeyondTheYears1To9999(t *testing.T) {
	t.Parallel()
	const migration = "20261121150000" // times_within_years_1_to_9999
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			store := dbtest.Open(t, kind)
			due := persistence.Now().Add(-time.Second)
			late, early, now := newWorkflow("t", persistence.StatusInProgress, &due), newWorkflow("t", persistence.StatusInProgress, &due),
				newWorkflow("t", persistence.StatusInProgress, &due)
			require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{late, early, now}))
			sc := &persistence.Schedule{DefinitionType: "t", Cron: "@daily", Timezone: "UTC", OverlapPolicy: "SKIP", NextFire: &due}
			require.NoError(t, store.ScheduleInsert(ctx, sc))

			if kind == persistence.KindMySQL {
				// MariaDB/MySQL never held such times: DATETIME refuses them, so there is nothing to move.
				_, err := store.DB().ExecContext(ctx, "UPDATE workflows SET next_activation = '10000-01-01 23:58:59' WHERE id = "+itoa(late.ID))
				require.Error(t, err)
				return
			}
			// Write what older versions wrote, behind the Store's back.
			tooLate, tooEarly := "'10000-01-01 23:58:59+00:00'", "'-0001-12-31 00:00:00+00:00'"
			if kind == persistence.KindPostgres {
				tooLate, tooEarly = "'10000-01-01 23:58:59+00'", "NULL" // PostgreSQL refused years before 0001
			}
			for _, q := range []string{
				"UPDATE workflows SET next_activation = " + tooLate + " WHERE id = " + itoa(late.ID),
				"UPDATE workflows SET next_activation = " + tooEarly + " WHERE id = " + itoa(early.ID),
				"UPDATE schedules SET start_at = " + tooLate + ", end_at = " + tooLate + ", next_fire = " + tooLate + " WHERE id = " + itoa(sc.ID),
				"DELETE FROM cairn_migrations WHERE name = '" + migration + "'",
			} {
				_, err := store.DB().ExecContext(ctx, q)
				require.NoError(t, err, q)
			}
			applied, err := store.Migrate(ctx)
			require.NoError(t, err)
			require.Equal(t, []string{migration}, applied)

			last := time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
			w, err := store.WorkflowGet(ctx, late.ID)
			require.NoError(t, err)
			require.True(t, last.Equal(*w.NextActivation), "%s", w.NextActivation)
			if kind == persistence.KindSQLite {
				w, err = store.WorkflowGet(ctx, early.ID)
				require.NoError(t, err)
				require.True(t, time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Equal(*w.NextActivation), "%s", w.NextActivation)
			}
			got, err := store.ScheduleGet(ctx, sc.ID)
			require.NoError(t, err)
			require.True(t, last.Equal(*got.StartAt))
			require.True(t, last.Equal(*got.EndAt))
			require.Nil(t, got.NextFire)

			listed, _, err := store.WorkflowList(ctx, persistence.WorkflowListParams{OrderBy: persistence.WorkflowOrderNextActivation, Limit: 10})
			require.NoError(t, err)
			require.Len(t, listed, 3)
			pos := map[int64]int{}
			for i, w := range listed {
				pos[w.ID] = i
			}
			require.Greater(t, pos[late.ID], pos[now.ID], "the moved time sorts after today's")
			exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Minute})
			require.NoError(t, err)
			claimed, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: 10,
				Now: persistence.Now(), StepDeadline: persistence.Now().Add(time.Minute), Types: []string{"t"}})
			require.NoError(t, err)
			require.Len(t, claimed, map[persistence.Kind]int{persistence.KindSQLite: 2, persistence.KindPostgres: 1}[kind],
				"the workflows due now are claimed (on PostgreSQL the early one has no activation)")
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
