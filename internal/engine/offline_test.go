package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// An OFFLINE type starts nothing new by any path: a start, a bulk start, a step's child, a
// schedule's fire or a backfill.
func TestOfflineTypeStartsNothing(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		_, err := engine.Register(ctx, workflow.Definition{Type: "t.parent", States: []workflow.State{
			{Name: "spawn", Kind: workflow.Start, Next: []string{"join"}, Handler: func(c workflow.StepContext) (workflow.Next, error) {
				c.StartChild(workflow.ChildRequest{Type: "bench.noop"})
				return workflow.MoveTo("join"), nil
			}},
			{Name: "join", Kind: workflow.Wait, WaitFor: &workflow.WaitFor{Children: true}, Next: []string{"done"}},
			{Name: "done", Kind: workflow.End},
			{Name: "failed", Kind: workflow.ErrorKind},
		}})
		require.NoError(t, err)
		hourly, err := engine.CreateSchedule(ctx, workflow.ScheduleParams{Type: "bench.noop", Cron: "0 * * * *"})
		require.NoError(t, err)
		parent, err := engine.Start(ctx, workflow.StartParams{Type: "t.parent"})
		require.NoError(t, err)
		_, err = engine.SetReleaseState(ctx, "bench.noop", persistence.ReleaseOffline, "")
		require.NoError(t, err)

		_, err = engine.Start(ctx, workflow.StartParams{Type: "bench.noop"})
		requireCode(t, err, workflow.CodeConflict, "type")
		_, err = engine.StartMany(ctx, []workflow.StartParams{{Type: "t.parent"}, {Type: "bench.noop"}})
		requireCode(t, err, workflow.CodeConflict, "workflows[1].type")
		n, err := engine.FireSchedules(ctx, hourly.NextFire.Add(time.Second))
		require.NoError(t, err)
		require.Zero(t, n)
		from := time.Now().Add(-5 * time.Hour)
		_, err = engine.BackfillSchedule(ctx, hourly.ID, from, from.Add(3*time.Hour))
		requireCode(t, err, workflow.CodeConflict, "id")

		// The parent's step asked for a child of the OFFLINE type: its result cannot be written, and
		// the attempt fails for good (no retries spent on what cannot succeed), as the worker records it.
		e, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "test", PID: 1, Group: workflow.DefaultGroup, Expiry: time.Hour})
		require.NoError(t, err)
		ws, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: e.ID, Group: workflow.DefaultGroup, Limit: 10,
			Now: persistence.Now(), StepDeadline: persistence.Now().Add(time.Minute), Types: []string{"t.parent"}})
		require.NoError(t, err)
		require.Len(t, ws, 1)
		o := engine.Execute(ctx, executeParams{Workflow: ws[0], ExecutorID: e.ID, Host: "test"})
		_, err = engine.Complete(ctx, []*outcome{o})
		require.Error(t, err)
		require.True(t, workflow.IsNonRetryable(err), "error: %v", err)
		written, err := engine.Complete(ctx, []*outcome{engine.FailOutcome(o, err)})
		require.NoError(t, err)
		require.Len(t, written, 1)
		w, err := store.WorkflowGet(ctx, parent.Workflow.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusFailed, w.Status)
		require.Equal(t, "failed", w.State)
		require.Contains(t, *w.LastError, "OFFLINE")

		count, err := store.WorkflowCount(ctx, persistence.WorkflowFilter{Types: []string{"bench.noop"}})
		require.NoError(t, err)
		require.Zero(t, count, "no path started a workflow of the OFFLINE type")
	})
}
