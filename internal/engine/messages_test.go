package engine_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// The texts the engine stores for clients to read name no internal row numbers (which clients
// cannot use: the API names objects by opaque IDs).
func TestStoredTextsNameNoRowNumbers(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		_, err := engine.Register(ctx, workflow.Definition{Type: "t.family", States: []workflow.State{
			{Name: "spawn", Kind: workflow.Start, Next: []string{"join"}, Handler: func(c workflow.StepContext) (workflow.Next, error) {
				c.StartChild(workflow.ChildRequest{Type: "demo.approval"})
				return workflow.MoveTo("join"), nil
			}},
			{Name: "join", Kind: workflow.Wait, WaitFor: &workflow.WaitFor{Children: true}, Next: []string{"done"}},
			{Name: "done", Kind: workflow.End},
		}})
		require.NoError(t, err)
		parent, err := engine.Start(ctx, workflow.StartParams{Type: "t.family"})
		require.NoError(t, err)
		runDue(t, store, engine)
		_, err = engine.Cancel(ctx, workflow.ChangeParams{ID: parent.Workflow.ID})
		require.NoError(t, err)

		children, _, err := store.WorkflowList(ctx, persistence.WorkflowListParams{Filter: persistence.WorkflowFilter{Types: []string{"demo.approval"}}, Limit: 10})
		require.NoError(t, err)
		require.Len(t, children, 1)
		require.Equal(t, persistence.StatusCancelled, children[0].Status)
		actions, err := store.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: []int64{children[0].ID}})
		require.NoError(t, err)
		require.NotEmpty(t, actions)
		text := *actions[len(actions)-1].StateText
		require.Contains(t, text, "ancestor")
		require.NotRegexp(t, regexp.MustCompile(`(^|[^\w])\d+([^\w]|$)`), text)
	})
}
