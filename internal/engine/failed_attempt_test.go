package engine_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// A step that fails its workflow (Fail, as a Serverless Workflow document's fault does with its
// Problem) leaves its attempt FAILED with the reason, and the state text says the Problem's title
// and detail, not its JSON.
func TestFailedWorkflowShowsItsFailingStep(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		problem := `{"type":"https://serverlessworkflow.io/spec/1.0.0/errors/validation","status":400,"title":"Card Declined","detail":"the bank said no","instance":"/do/0/charge"}`
		for typ, reason := range map[string]string{"t.fail.problem": problem, "t.fail.text": "card declined"} {
			_, err := engine.Register(ctx, workflow.Definition{Type: typ, States: []workflow.State{
				{Name: "charge", Kind: workflow.Start, Next: []string{"done"}, Handler: func(workflow.StepContext) (workflow.Next, error) {
					return workflow.Fail(reason), nil
				}},
				{Name: "done", Kind: workflow.End},
				{Name: "rejected", Kind: workflow.ErrorKind},
			}})
			require.NoError(t, err)
		}
		want := map[string]string{"t.fail.problem": "Card Declined: the bank said no", "t.fail.text": "card declined"}
		ids := map[string]int64{}
		for typ := range want {
			res, err := engine.Start(ctx, workflow.StartParams{Type: typ})
			require.NoError(t, err)
			ids[typ] = res.Workflow.ID
		}
		runDue(t, store, engine)
		for typ, text := range want {
			w, err := store.WorkflowGet(ctx, ids[typ])
			require.NoError(t, err)
			require.Equal(t, persistence.StatusFailed, w.Status, typ)
			require.Equal(t, "rejected", w.State)
			require.Equal(t, text, *w.StateText, typ)
			tasks, err := store.TaskInstanceList(ctx, persistence.TaskInstanceListParams{WorkflowIDs: []int64{w.ID}})
			require.NoError(t, err)
			require.Len(t, tasks, 1)
			require.Equal(t, persistence.TaskFailed, tasks[0].Status, typ)
			require.Equal(t, "charge", tasks[0].State)
			require.Equal(t, *w.LastError, *tasks[0].Error, "the failing attempt carries the reason (the Problem's JSON)")
			actions, err := store.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: []int64{w.ID}})
			require.NoError(t, err)
			require.Equal(t, text, *actions[len(actions)-1].StateText, typ)
		}
	})
}
