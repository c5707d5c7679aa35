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

// runDue claims and runs the steps due now until none is left (at most 20 rounds).
func runDue(t *testing.T, store *persistence.Store, engine *engine.Engine) {
	t.Helper()
	ctx := context.Background()
	e, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "test", PID: 1, Group: workflow.DefaultGroup, Expiry: time.Hour})
	require.NoError(t, err)
	for range 20 {
		ws, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: e.ID, Group: workflow.DefaultGroup, Limit: 100,
			Now: persistence.Now(), StepDeadline: persistence.Now().Add(time.Minute), Types: engine.Types(workflow.DefaultGroup)})
		require.NoError(t, err)
		if len(ws) == 0 {
			return
		}
		var outcomes []*outcome
		for _, w := range ws {
			outcomes = append(outcomes, engine.Execute(ctx, executeParams{Workflow: w, ExecutorID: e.ID, Host: "test"}))
		}
		_, err = engine.Complete(ctx, outcomes)
		require.NoError(t, err)
	}
}

// A workflow whose step moved it to its ERROR state is retried from that step by default.
func TestRetryFromTheErrorStateDefaultsToTheStateThatFailed(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		_, err := engine.Register(ctx, workflow.Definition{Type: "t.refuse", States: []workflow.State{
			{Name: "check", Kind: workflow.Start, Next: []string{"charge"}, Handler: func(workflow.StepContext) (workflow.Next, error) {
				return workflow.MoveTo("charge"), nil
			}},
			{Name: "charge", Kind: workflow.Normal, Next: []string{"done", "rejected"}, Handler: func(workflow.StepContext) (workflow.Next, error) {
				return workflow.Fail("card declined"), nil
			}},
			{Name: "done", Kind: workflow.End},
			{Name: "rejected", Kind: workflow.ErrorKind},
		}})
		require.NoError(t, err)
		res, err := engine.Start(ctx, workflow.StartParams{Type: "t.refuse"})
		require.NoError(t, err)
		id := res.Workflow.ID
		runDue(t, store, engine)
		w, err := store.WorkflowGet(ctx, id)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusFailed, w.Status)
		require.Equal(t, "rejected", w.State)

		// Later changes that leave it in its ERROR state (more than a page of history) do not hide
		// where it failed.
		// An ended workflow takes no update, so the history is written as it stands.
		for range 105 {
			seen, from := "seen", "rejected"
			require.NoError(t, store.ActionInsertMany(ctx, []*persistence.Action{{WorkflowID: id, Type: persistence.ActionExternalChange,
				FromState: &from, State: "rejected", StateText: &seen, At: persistence.Now()}}))
		}

		w, err = engine.Retry(ctx, workflow.RetryParams{ChangeParams: workflow.ChangeParams{ID: id, Reason: "card updated"}})
		require.NoError(t, err)
		require.Equal(t, "charge", w.State)
		require.Equal(t, persistence.StatusInProgress, w.Status)

		// Moved to its ERROR state by an operator: retried from where it was before.
		other, err := engine.Start(ctx, workflow.StartParams{Type: "t.refuse"})
		require.NoError(t, err)
		_, err = engine.Update(ctx, workflow.UpdateParams{ChangeParams: workflow.ChangeParams{ID: other.Workflow.ID}, State: ptr("rejected")})
		require.NoError(t, err)
		w, err = engine.Retry(ctx, workflow.RetryParams{ChangeParams: workflow.ChangeParams{ID: other.Workflow.ID}})
		require.NoError(t, err)
		require.Equal(t, "check", w.State)
	})
}
