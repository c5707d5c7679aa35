package graph_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// TestExecutorsAndSchedulesPage checks first/after (and alive) on the executors and schedules
// lists, so that a dashboard never has to load them all.
func TestExecutorsAndSchedulesPage(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		b := setup(t, store)
		var ids []int64
		for i := 0; i < 3; i++ {
			e, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: i + 1, Group: "default", Expiry: time.Minute})
			require.NoError(t, err)
			ids = append(ids, e.ID)
		}
		require.NoError(t, store.ExecutorStop(ctx, ids[1]))

		type execs struct {
			Executors []struct {
				ID    string
				Pid   int
				Alive bool
			}
		}
		pids := func(q string, vars map[string]any) ([]int, string) {
			t.Helper()
			var out execs
			b.must(t, q, &out, vars)
			var ps []int
			last := ""
			for _, e := range out.Executors {
				ps = append(ps, e.Pid)
				last = e.ID
			}
			return ps, last
		}
		const q = `query($f: Int, $a: ID, $alive: Boolean) { executors(first: $f, after: $a, alive: $alive) { id pid alive } }`
		all, _ := pids(q, nil)
		require.Equal(t, []int{3, 2, 1}, all, "newest first, all without first")
		page, last := pids(q, map[string]any{"f": 2})
		require.Equal(t, []int{3, 2}, page)
		page, _ = pids(q, map[string]any{"f": 2, "a": last})
		require.Equal(t, []int{1}, page)
		page, _ = pids(q, map[string]any{"alive": true})
		require.Equal(t, []int{3, 1}, page)
		page, _ = pids(q, map[string]any{"alive": false})
		require.Equal(t, []int{2}, page)
		b.fails(t, "INVALID_INPUT", `{ executors(first: 0) { id } }`, nil)
		b.fails(t, "INVALID_INPUT", `{ executors(first: 1001) { id } }`, nil)
		b.fails(t, "INVALID_INPUT", `{ schedules(after: "garbage") { id } }`, nil)

		var created []string
		for _, cron := range []string{"@daily", "@hourly", "@every 10m"} {
			var out struct {
				CreateSchedule struct{ Schedule struct{ ID string } }
			}
			b.must(t, `mutation($c: String!) { createSchedule(input: {type: "test.flow", cron: $c}) { schedule { id } } }`, &out, map[string]any{"c": cron})
			created = append(created, out.CreateSchedule.Schedule.ID)
		}
		scheds := func(vars map[string]any) []string {
			t.Helper()
			var out struct{ Schedules []struct{ ID string } }
			b.must(t, `query($f: Int, $a: ID) { schedules(first: $f, after: $a) { id } }`, &out, vars)
			var got []string
			for _, s := range out.Schedules {
				got = append(got, s.ID)
			}
			return got
		}
		require.Equal(t, created, scheds(nil), "oldest first, all without first")
		require.Equal(t, created[:2], scheds(map[string]any{"f": 2}))
		require.Equal(t, created[2:], scheds(map[string]any{"f": 2, "a": created[1]}))
	})
}
