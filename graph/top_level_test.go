package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// TestWorkflowFilterTopLevel checks filter.topLevel through the API on every backend: the list,
// its count, the stats and a live subscription keep only the workflows with no parent (true) or
// only the children (false), and null keeps all.
func TestWorkflowFilterTopLevel(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		parentID := b.start(t, map[string]any{"businessKey": "parent"})
		parent := newestWorkflow(t, store)
		child := &persistence.Workflow{Type: "test.flow", DefinitionVersion: 1, Status: persistence.StatusCreated, State: "start",
			ExecutorGroup: "default", ParentID: &parent.ID, RootID: &parent.ID}
		require.NoError(t, store.WorkflowInsertMany(context.Background(), []*persistence.Workflow{child}))
		var childID string
		var kids struct {
			Workflow struct {
				Children struct{ Nodes []struct{ ID string } }
			}
		}
		b.must(t, `query($id: ID!) { workflow(id: $id) { children(first: 5) { nodes { id } } } }`, &kids, map[string]any{"id": parentID})
		require.Len(t, kids.Workflow.Children.Nodes, 1)
		childID = kids.Workflow.Children.Nodes[0].ID

		read := func(topLevel any) ([]string, int, int) {
			t.Helper()
			var out struct {
				Workflows struct {
					Edges      []struct{ Node struct{ ID string } }
					TotalCount int
				}
				WorkflowStats struct{ Total int }
			}
			b.must(t, `query($f: WorkflowFilter) { workflows(filter: $f) { edges { node { id } } totalCount } workflowStats(filter: $f) { total } }`,
				&out, map[string]any{"f": map[string]any{"topLevel": topLevel}})
			var ids []string
			for _, e := range out.Workflows.Edges {
				ids = append(ids, e.Node.ID)
			}
			return ids, out.Workflows.TotalCount, out.WorkflowStats.Total
		}
		ids, total, stats := read(true)
		require.Equal(t, []string{parentID}, ids)
		require.Equal(t, 1, total)
		require.Equal(t, 1, stats)
		ids, total, stats = read(false)
		require.Equal(t, []string{childID}, ids)
		require.Equal(t, 1, total)
		require.Equal(t, 1, stats)
		ids, total, stats = read(nil)
		require.Equal(t, []string{childID, parentID}, ids)
		require.Equal(t, 2, total)
		require.Equal(t, 2, stats)

		// Live: the top-level subscription sees the parent's events and none of the child's.
		ws, _, err := dialWS(t, b, "")
		require.NoError(t, err)
		ws.init()
		ws.subscribe("top", eventsQuery, map[string]any{"filter": map[string]any{"topLevel": true}, "after": graph.EventCursorStart()})
		require.Equal(t, parentID, ws.nextEvent().WorkflowID, "the parent's CREATED")
		var out map[string]any
		for _, id := range []string{childID, parentID} {
			b.must(t, `mutation($id: ID!) { pauseWorkflow(input: {id: $id}) { workflow { id } } }`, &out, map[string]any{"id": id})
		}
		ev := ws.nextEvent()
		require.Equal(t, parentID, ev.WorkflowID, "the child's pause is not top-level")
		require.Equal(t, "PAUSED", ev.Status)
		ws.subscribe("kids", eventsQuery, map[string]any{"filter": map[string]any{"topLevel": false}, "after": graph.EventCursorStart()})
		ev = ws.nextEvent()
		require.Equal(t, childID, ev.WorkflowID, "only the child's events")
		require.Equal(t, "PAUSED", ev.Status)
	})
}
