package pool_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// A remote result's transaction claims the workflow it wakes for the node's pool: its next step
// runs on the pool without a claim of its own, once, and the workflow finishes with the output.
func TestRemoteResultClaimsTheWorkflowItWakes(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store, remoteEcho("remote.woken", "woken", nil))
		w := b.startWorker(t, steadyOptions())
		wf := b.start(t, "remote.woken", `{"n": 1}`)
		task := pollOne(t, b.engine, "woken", 30000, "w1")
		b.waitStatus(t, wf.ID, persistence.StatusWaiting)
		claimed := w.Stats().Claimed.Load()

		_, err := b.engine.CompleteTask(context.Background(), task.Token, json.RawMessage(`{"echo": 1}`), nil)
		require.NoError(t, err)
		done := b.waitStatus(t, wf.ID, persistence.StatusFinished)
		require.Equal(t, map[string]any{"echo": float64(1)}, vars(t, done)["result"])
		require.EqualValues(t, 1, w.Stats().ClaimedOnWake.Load(), "claimed by the result's transaction")
		require.Equal(t, claimed+1, w.Stats().Claimed.Load(), "and by no other claim")
		var succeeded []*persistence.TaskInstance
		for _, ti := range b.tasks(t, wf.ID) {
			if ti.Status == persistence.TaskSucceeded {
				succeeded = append(succeeded, ti)
			}
		}
		require.Len(t, succeeded, 1, "the step that took the output ran once")
		require.Equal(t, "remote:woken", succeeded[0].TaskType)
	})
}

// A pool with no free slot takes nothing from a wake-up: the workflow is woken for any claim,
// and runs once a slot frees. A type under flow control is never claimed by a wake-up (its flow
// claim decides when it runs).
func TestWokenWorkflowsAreClaimedOnlyWithFreeSlotsAndWithoutFlowControl(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		release := make(chan struct{})
		blocker := workflow.Definition{Type: "remote.blocker", States: []workflow.State{
			{Name: "block", Kind: workflow.Start, Next: []string{"done"}, Handler: func(c workflow.StepContext) (workflow.Next, error) {
				<-release
				return workflow.MoveTo("done"), nil
			}},
			{Name: "done", Kind: workflow.End},
		}}
		limited := remoteEcho("remote.limited", "limited", nil)
		limited.FlowControl = &workflow.FlowControl{Concurrency: &workflow.Concurrency{Limit: 5, Scope: workflow.ScopeStep}}
		b := setup(t, store, remoteEcho("remote.full", "full", nil), blocker, limited)
		opts := steadyOptions()
		opts.Concurrency = 1
		w := b.startWorker(t, opts)

		wf := b.start(t, "remote.full", `{}`)
		task := pollOne(t, b.engine, "full", 30000, "w1")
		b.waitStatus(t, wf.ID, persistence.StatusWaiting)
		block := b.start(t, "remote.blocker", `{}`)
		b.waitStatus(t, block.ID, persistence.StatusExecuting) // the pool's only slot
		_, err := b.engine.CompleteTask(context.Background(), task.Token, json.RawMessage(`{"echo": 2}`), nil)
		require.NoError(t, err)
		woken, err := store.WorkflowGet(context.Background(), wf.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusInProgress, woken.Status, "woken, not claimed")
		require.Nil(t, woken.ExecutorID)
		close(release)
		b.waitStatus(t, block.ID, persistence.StatusFinished)
		b.waitStatus(t, wf.ID, persistence.StatusFinished)

		lim := b.start(t, "remote.limited", `{}`)
		task = pollOne(t, b.engine, "limited", 30000, "w1")
		b.waitStatus(t, lim.ID, persistence.StatusWaiting)
		_, err = b.engine.CompleteTask(context.Background(), task.Token, json.RawMessage(`{"echo": 3}`), nil)
		require.NoError(t, err)
		b.waitStatus(t, lim.ID, persistence.StatusFinished)
		require.Zero(t, w.Stats().ClaimedOnWake.Load())
	})
}
