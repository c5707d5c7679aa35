package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// A cancel that comes after a workflow was claimed but before its step started (there is nothing
// to cancel yet when the hint arrives) still stops the step as soon as it starts, instead of
// letting it run to its timeout.
func TestCancelBetweenClaimAndStepStart(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		engine := engine.New(store, engine.Options{})
		_, err := engine.Register(ctx, workflow.Definition{Type: "test.blocking", States: []workflow.State{
			{Name: "block", Kind: workflow.Start, Timeout: time.Minute, Next: []string{"done"},
				Handler: func(sc workflow.StepContext) (workflow.Next, error) {
					<-sc.Done()
					return workflow.Next{}, sc.Err()
				}},
			{Name: "done", Kind: workflow.End},
		}})
		require.NoError(t, err)

		res, err := engine.Start(ctx, workflow.StartParams{Type: "test.blocking"})
		require.NoError(t, err)
		exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Minute})
		require.NoError(t, err)
		claimed, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: 1,
			Now: persistence.Now(), StepDeadline: persistence.Now().Add(time.Minute), Types: []string{"test.blocking"}})
		require.NoError(t, err)
		require.Len(t, claimed, 1)

		_, err = engine.Cancel(ctx, workflow.ChangeParams{ID: res.Workflow.ID, Reason: "before the step starts"})
		require.NoError(t, err)

		done := make(chan *outcome, 1)
		go func() {
			done <- engine.Execute(ctx, executeParams{Workflow: claimed[0], ExecutorID: exec.ID, Host: "h"})
		}()
		var o *outcome
		select {
		case o = <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("the step did not see the cancel that came before it started")
		}
		require.Equal(t, persistence.TaskCancelled, o.TaskStatus())
		written, err := engine.Complete(ctx, []*outcome{o})
		require.NoError(t, err)
		require.Empty(t, written, "the cancelled attempt's result was written")
		tasks, err := store.TaskInstanceList(ctx, persistence.TaskInstanceListParams{WorkflowIDs: []int64{res.Workflow.ID}})
		require.NoError(t, err)
		require.Len(t, tasks, 1)
		require.Equal(t, persistence.TaskCancelled, tasks[0].Status)
		w, err := store.WorkflowGet(ctx, res.Workflow.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusCancelled, w.Status)
		require.Nil(t, w.ExecutorID)
	})
}
