package worker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// A live executor that the database says holds a workflow it is not running (its completion was
// lost when the database crashed) releases it, and the workflow finishes.
func TestHeldButNotRunningWorkflowsAreReleased(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		b := setup(t, store)
		w := b.startWorker(t, fastOptions())
		require.Eventually(t, func() bool { return w.ExecutorID() != 0 }, 5*time.Second, 5*time.Millisecond)

		// Leave a workflow as a lost completion would: EXECUTING under the live executor.
		future := time.Now().Add(time.Hour)
		res, err := b.engine.Start(ctx, workflow.StartParams{Type: "demo.order", StartAt: &future})
		require.NoError(t, err)
		wf := res.Workflow
		row, err := store.WorkflowGet(ctx, wf.ID)
		require.NoError(t, err)
		id := w.ExecutorID()
		row.Status, row.ExecutorID, row.NextActivation = persistence.StatusExecuting, &id, &future
		require.NoError(t, store.WorkflowSave(ctx, row))

		done := b.waitStatus(t, wf.ID, persistence.StatusFinished)
		require.Equal(t, "done", done.State)
		actions := b.actions(t, wf.ID)
		require.Equal(t, persistence.ActionRecovery, actions[0].Type)
		require.GreaterOrEqual(t, w.Stats().Recovered.Load(), int64(1))
	})
}

func TestRetentionPurgesEndedWorkflows(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		b := setup(t, store)
		opts := fastOptions()
		opts.Retention = time.Second
		b.startWorker(t, opts)
		w := b.start(t, "demo.order", `{}`)
		b.waitStatus(t, w.ID, persistence.StatusFinished)
		require.Eventually(t, func() bool {
			_, err := store.WorkflowGet(ctx, w.ID)
			return errors.Is(err, persistence.ErrNotFound)
		}, 20*time.Second, 50*time.Millisecond, "an ended workflow older than the retention is purged")
		require.Empty(t, b.actions(t, w.ID))
		running := b.start(t, "demo.approval", `{}`)
		b.waitStatus(t, running.ID, persistence.StatusWaiting)
		time.Sleep(1500 * time.Millisecond)
		_, err := store.WorkflowGet(ctx, running.ID)
		require.NoError(t, err, "a workflow that has not ended stays")
	})
}

func TestWorkersFireSchedules(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		b := setup(t, store)
		b.startWorker(t, fastOptions())
		b.startWorker(t, fastOptions()) // two nodes: each fire still starts one run
		sc, err := b.engine.CreateSchedule(ctx, workflow.ScheduleParams{Type: "bench.noop", Cron: "@every 1s"})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			n, err := store.WorkflowCount(ctx, persistence.WorkflowFilter{Types: []string{"bench.noop"}, Statuses: []persistence.Status{persistence.StatusFinished}})
			require.NoError(t, err)
			return n >= 2
		}, 20*time.Second, 50*time.Millisecond, "the schedule's runs start and finish")
		_, err = b.engine.SetSchedulePaused(ctx, sc.ID, true)
		require.NoError(t, err)
		runs, _, err := store.WorkflowList(ctx, persistence.WorkflowListParams{Filter: persistence.WorkflowFilter{Types: []string{"bench.noop"}}, Limit: 100})
		require.NoError(t, err)
		for _, r := range runs {
			require.Equal(t, fmt.Sprintf("schedule:%d", sc.ID), *r.LaunchToken)
		}
		got, err := store.ScheduleGet(ctx, sc.ID)
		require.NoError(t, err)
		require.NotNil(t, got.LastFire)
		require.LessOrEqual(t, len(runs), int(time.Since(sc.Created)/time.Second)+2, "no fire started two runs")
	})
}

func TestEventRetentionTrimsOldChangeEvents(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		b := setup(t, store)
		opts := fastOptions()
		opts.EventRetention = time.Second
		b.startWorker(t, opts)
		w := b.start(t, "demo.order", `{}`)
		b.waitStatus(t, w.ID, persistence.StatusFinished)
		require.Eventually(t, func() bool {
			events, err := store.ChangeEventList(ctx, persistence.ChangeEventListParams{Limit: 10})
			require.NoError(t, err)
			return len(events) == 0
		}, 20*time.Second, 50*time.Millisecond, "events older than the window are trimmed")
		_, err := store.WorkflowGet(ctx, w.ID)
		require.NoError(t, err, "the workflow stays: events have a window of their own")
	})
}
