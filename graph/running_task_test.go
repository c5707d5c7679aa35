package graph_test

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

// A running step shows as a RUNNING task instance (derived from the claim, not stored), last in
// its workflow's list and counted; cancelling the workflow leaves it running until the attempt
// ends, which then shows as CANCELLED.
func TestRunningAndCancelledTaskInstances(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		b := setup(t, store)
		id := b.start(t, nil)
		exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "node-7", PID: 1, Group: "default", Expiry: time.Minute})
		require.NoError(t, err)
		claimedAt := persistence.Now()
		claimed, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: 1, Now: claimedAt,
			StepDeadline: claimedAt.Add(workflow.DefaultStepTimeout), Types: []string{"test.flow"}})
		require.NoError(t, err)
		require.Len(t, claimed, 1)

		type task struct {
			ID, State, Status, Host, Started string
			Attempt                          int
			Executor                         *struct{ Host string }
		}
		type page struct {
			Workflow struct {
				StepDeadline  string
				TaskInstances struct {
					TotalCount int
					Nodes      []task
					Edges      []struct{ Cursor string }
					PageInfo   struct{ HasNextPage, HasPreviousPage bool }
				}
			}
		}
		query := func(vars map[string]any) page {
			var out page
			vars["id"] = id
			b.must(t, `query($id: ID!, $first: Int, $after: String, $last: Int, $before: String) { workflow(id: $id) { stepDeadline
				taskInstances(first: $first, after: $after, last: $last, before: $before) {
				totalCount nodes { id state status host started attempt executor { host } } edges { cursor } pageInfo { hasNextPage hasPreviousPage } } } }`,
				&out, vars)
			return out
		}
		got := query(map[string]any{"first": 10}).Workflow.TaskInstances
		require.Equal(t, 1, got.TotalCount)
		require.Len(t, got.Nodes, 1)
		running := got.Nodes[0]
		require.Equal(t, "RUNNING", running.Status)
		require.Equal(t, "start", running.State)
		require.Equal(t, 1, running.Attempt)
		require.Equal(t, "node-7", running.Host)
		require.Equal(t, "node-7", running.Executor.Host)
		started, err := time.Parse(time.RFC3339Nano, running.Started)
		require.NoError(t, err)
		require.WithinDuration(t, claimedAt, started, time.Millisecond)
		require.NotEmpty(t, running.ID)

		// Paging: it sorts after every stored row.
		cursor := got.Edges[0].Cursor
		require.Empty(t, query(map[string]any{"first": 10, "after": cursor}).Workflow.TaskInstances.Nodes)
		require.Len(t, query(map[string]any{"last": 1}).Workflow.TaskInstances.Nodes, 1)
		require.Empty(t, query(map[string]any{"last": 10, "before": cursor}).Workflow.TaskInstances.Nodes)

		// Cancelled while it runs: still running until the attempt ends, then CANCELLED.
		_, err = b.engine.Cancel(ctx, workflow.ChangeParams{ID: claimed[0].ID})
		require.NoError(t, err)
		require.Equal(t, "RUNNING", query(map[string]any{"first": 10}).Workflow.TaskInstances.Nodes[0].Status)
		o := b.engine.Execute(ctx, engine.ExecuteParams{Workflow: claimed[0], ExecutorID: exec.ID, Host: "node-7"})
		written, err := b.engine.Complete(ctx, []*engine.Outcome{o})
		require.NoError(t, err)
		require.Empty(t, written, "the cancelled attempt's result is fenced off")
		got = query(map[string]any{"first": 10}).Workflow.TaskInstances
		require.Equal(t, 1, got.TotalCount)
		require.Len(t, got.Nodes, 1)
		require.Equal(t, "CANCELLED", got.Nodes[0].Status)
		require.NotEqual(t, running.ID, got.Nodes[0].ID)
		w, err := store.WorkflowGet(ctx, claimed[0].ID)
		require.NoError(t, err)
		require.Nil(t, w.ExecutorID)
		require.Equal(t, persistence.StatusCancelled, w.Status)
	})
}
