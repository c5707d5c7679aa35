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

// An attempt fenced off although nobody changed its workflow (the commit that kept its claim was
// lost in a database crash, so the row is at an older version) must not leave the workflow
// EXECUTING with no executor, where nothing claims or recovers it: it stays held, and the
// executor's reconciliation recovers it.
func TestFencedAttemptOfAnUnchangedWorkflowIsRecovered(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		res, err := engine.Start(ctx, workflow.StartParams{Type: "bench.noop"})
		require.NoError(t, err)
		exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Minute})
		require.NoError(t, err)
		claimed, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: 1,
			Now: persistence.Now(), StepDeadline: persistence.Now().Add(time.Minute), Types: []string{"bench.noop"}})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		o := engine.Execute(ctx, executeParams{Workflow: claimed[0], ExecutorID: exec.ID, Host: "h"})
		// The attempt believes it holds the next version (as after a kept claim whose commit was lost).
		_, err = store.DB().NewUpdate().TableExpr("workflows").Set("version = version - 1").Where("id = ?", res.Workflow.ID).Exec(ctx)
		require.NoError(t, err)

		written, err := engine.Complete(ctx, []*outcome{o})
		require.NoError(t, err)
		require.Empty(t, written, "fenced off")
		w, err := store.WorkflowGet(ctx, res.Workflow.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusExecuting, w.Status)
		require.NotNil(t, w.ExecutorID, "an EXECUTING workflow with no executor is lost")

		n, err := engine.Recover(ctx, recoverParams{ExecutorID: exec.ID, Held: []int64{w.ID}})
		require.NoError(t, err)
		require.Equal(t, 1, n)
		w, err = store.WorkflowGet(ctx, res.Workflow.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusInProgress, w.Status)
		require.Nil(t, w.ExecutorID)
	})
}
