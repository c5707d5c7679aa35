package pool_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/pool"
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

// A claim that a busy machine holds up between its commit and the pool's list of what it holds,
// for longer than a heartbeat interval, keeps its workflow: the pool's upkeep leaves alone what
// changed since the oldest claim in progress began. Before, the upkeep released the workflow as
// held but not running, and a second claim ran its step beside the first (seen once in CI as two
// steps in flight for one workflow).
func TestUpkeepLeavesAClaimInProgressAlone(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		var once sync.Once
		w := b.startWorker(t, steadyOptions(), func(w *pool.Worker) {
			w.SetAfterClaimForTest(func(claimed []*persistence.Workflow) {
				if len(claimed) > 0 {
					once.Do(func() { time.Sleep(5 * steadyOptions().HeartbeatInterval) })
				}
			})
		})
		wf := b.start(t, "demo.order", `{}`)
		b.waitStatus(t, wf.ID, persistence.StatusFinished)
		require.Zero(t, w.Stats().Recovered.Load(), "nothing was released as held but not running")
		for _, ti := range b.tasks(t, wf.ID) {
			require.NotEqual(t, persistence.TaskLost, ti.Status, "%s", ti.State)
		}
	})
}
