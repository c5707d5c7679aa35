package cairn

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// waiter waits for a signal that never comes.
var waiter = workflow.Definition{Type: "bulk.waiter", States: []workflow.State{
	{Name: "wait", Kind: workflow.Start, Next: []string{"done"}, Handler: func(workflow.StepContext) (workflow.Next, error) {
		return workflow.MoveTo("parked"), nil
	}},
	{Name: "parked", Kind: workflow.Wait, Next: []string{"done"}, WaitFor: &workflow.WaitFor{Signal: "never"}},
	{Name: "done", Kind: workflow.End},
}}

// A running node's bulk runner carries on an operation whose node died (its lease held by a
// runner that is gone) once that lease has run out, and cancels every workflow of the snapshot
// once.
func TestNodeCarriesOnADeadNodesBulkOperation(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		opts := fastOptions()
		opts.BulkLease = time.Second
		node := newNode(t, store, opts, waiter)
		ps := make([]workflow.StartParams, 30)
		for i := range ps {
			ps[i] = workflow.StartParams{Type: "bulk.waiter", BusinessKey: "node-bulk"}
		}
		_, err := node.StartMany(ctx, ps)
		require.NoError(t, err)
		key := "node-bulk"
		op, err := node.StartBulk(ctx, workflow.BulkParams{Action: workflow.BulkCancel, Filter: persistence.WorkflowFilter{BusinessKey: &key}, Actor: "tester"})
		require.NoError(t, err)
		now := persistence.Now()
		leased, err := store.BulkOperationLease(ctx, op.ID, "a node that died", now, now.Add(time.Second))
		require.NoError(t, err)
		require.True(t, leased)

		run(t, node)
		require.Eventually(t, func() bool {
			got, err := node.BulkOperation(ctx, op.ID)
			require.NoError(t, err)
			return got.Status.Ended()
		}, 90*time.Second, 20*time.Millisecond)
		got, err := node.BulkOperation(ctx, op.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.BulkSucceeded, got.Status)
		require.EqualValues(t, 30, got.Succeeded)
		cancelled := []persistence.Status{persistence.StatusCancelled}
		n, err := store.WorkflowCount(ctx, persistence.WorkflowFilter{BusinessKey: &key, Statuses: cancelled})
		require.NoError(t, err)
		require.Equal(t, 30, n)
	})
}
