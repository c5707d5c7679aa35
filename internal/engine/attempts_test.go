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

// A late attempt of an executor declared dead and the new attempt of the same workflow, completed
// in one batch: only the new one is written (the late one left no action and no task instance).
func TestCompleteBatchWithTwoAttemptsOfOneWorkflow(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		res, err := engine.Start(ctx, workflow.StartParams{Type: "bench.noop"})
		require.NoError(t, err)
		id := res.Workflow.ID
		claim := func(expiry time.Duration) (int64, *persistence.Workflow) {
			exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: expiry})
			require.NoError(t, err)
			claimed, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: 1,
				Now: persistence.Now(), StepDeadline: persistence.Now().Add(time.Minute), Types: []string{"bench.noop"}})
			require.NoError(t, err)
			require.Len(t, claimed, 1)
			return exec.ID, claimed[0]
		}
		deadExec, late := claim(200 * time.Millisecond)
		lateOutcome := engine.Execute(ctx, executeParams{Workflow: late, ExecutorID: deadExec, Host: "h"})
		time.Sleep(300 * time.Millisecond)
		liveExec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 2, Group: "default", Expiry: time.Minute})
		require.NoError(t, err)
		n, err := engine.Recover(ctx, recoverParams{ExecutorID: liveExec.ID})
		require.NoError(t, err)
		require.Equal(t, 1, n)
		newExec, fresh := claim(time.Minute)
		freshOutcome := engine.Execute(ctx, executeParams{Workflow: fresh, ExecutorID: newExec, Host: "h"})

		written, err := engine.Complete(ctx, []*outcome{freshOutcome, lateOutcome})
		require.NoError(t, err)
		require.Equal(t, []*outcome{freshOutcome}, written)
		w, err := store.WorkflowGet(ctx, id)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusFinished, w.Status)
		actions, err := store.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: []int64{id}})
		require.NoError(t, err)
		var executions int
		for _, a := range actions {
			if a.Type == persistence.ActionStateExecution {
				executions++
				require.Equal(t, newExec, *a.ExecutorID)
			}
		}
		require.Equal(t, 1, executions, "the late attempt recorded its step too")
		tasks, err := store.TaskInstanceList(ctx, persistence.TaskInstanceListParams{WorkflowIDs: []int64{id}})
		require.NoError(t, err)
		require.Len(t, tasks, 2)
		require.Equal(t, persistence.TaskLost, tasks[0].Status)
		require.Equal(t, persistence.TaskSucceeded, tasks[1].Status)
		require.Equal(t, newExec, *tasks[1].ExecutorID)
	})
}
