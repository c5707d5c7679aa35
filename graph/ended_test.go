package graph_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// Ended is ended: every operation that would change a FINISHED, FAILED or CANCELLED workflow is a
// CONFLICT and changes nothing (no row, no action); only retryWorkflow reopens a FAILED one.
func TestEndedWorkflowsRefuseChanges(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		b := setup(t, store)
		_, err := b.engine.Register(ctx, workflow.Definition{Type: "ended.form", States: []workflow.State{
			{Name: "start", Kind: workflow.Start, Next: []string{"review"}, Handler: func(workflow.StepContext) (workflow.Next, error) { return workflow.MoveTo("review"), nil }},
			{Name: "review", Kind: workflow.Manual, Next: []string{"done"}, FormSchema: json.RawMessage(`{"type": "object"}`)},
			{Name: "done", Kind: workflow.End},
			{Name: "failed", Kind: workflow.ErrorKind},
		}})
		require.NoError(t, err)
		op := func(name, input string) string {
			return `mutation($id: ID!) { ` + name + `(input: {id: $id` + input + `}) { workflow { id status } } }`
		}
		end := func(how string) string {
			var started struct {
				StartWorkflow struct{ Workflow struct{ ID string } }
			}
			b.must(t, `mutation { startWorkflow(input: {type: "ended.form", variables: {a: 0}}) { workflow { id } } }`, &started, nil)
			id := started.StartWorkflow.Workflow.ID
			var out map[string]any
			switch how {
			case "CANCELLED":
				b.must(t, op("cancelWorkflow", ""), &out, map[string]any{"id": id})
			case "FINISHED":
				b.must(t, op("updateWorkflow", `, state: "done"`), &out, map[string]any{"id": id})
			case "FAILED":
				b.must(t, op("updateWorkflow", `, state: "failed"`), &out, map[string]any{"id": id})
			}
			return id
		}
		refused := []string{
			op("updateWorkflow", `, variables: {a: 1}`),
			op("updateWorkflow", `, stateText: "x"`),
			op("updateWorkflow", `, state: "review"`),
			op("updateWorkflow", `, nextActivation: "2030-01-01T00:00:00Z"`),
			`mutation($id: ID!) { signalWorkflow(input: {id: $id, name: "s", payload: {a: 1}}) { workflow { id } } }`,
			op("pauseWorkflow", ""),
			op("resumeWorkflow", ""),
			op("cancelWorkflow", ""),
			op("wakeUpWorkflow", ""),
			`mutation($id: ID!) { submitForm(input: {id: $id, data: {a: 1}, submittedBy: "ann"}) { workflow { id } } }`,
		}
		for _, status := range []string{"FINISHED", "FAILED", "CANCELLED"} {
			id := end(status)
			before := newestWorkflow(t, store)
			require.Equal(t, status, string(before.Status))
			actions, err := store.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: []int64{before.ID}, Page: persistence.PageParams{Limit: 100}})
			require.NoError(t, err)
			for _, q := range refused {
				b.fails(t, "CONFLICT", q, map[string]any{"id": id})
			}
			if status != "FAILED" {
				b.fails(t, "CONFLICT", op("retryWorkflow", `, state: "review"`), map[string]any{"id": id})
			}
			after, err := store.WorkflowGet(ctx, before.ID)
			require.NoError(t, err)
			require.Equal(t, before.Version, after.Version, "%s: nothing changed", status)
			require.JSONEq(t, `{"a": 0}`, string(after.Variables))
			again, err := store.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: []int64{before.ID}, Page: persistence.PageParams{Limit: 100}})
			require.NoError(t, err)
			require.Len(t, again, len(actions), "%s: no action recorded", status)
			if status == "FAILED" {
				var out struct {
					RetryWorkflow struct{ Workflow struct{ ID, Status string } }
				}
				b.must(t, op("retryWorkflow", `, state: "review"`), &out, map[string]any{"id": id})
				require.Equal(t, "MANUAL", out.RetryWorkflow.Workflow.Status, "retryWorkflow reopens a FAILED workflow")
			}
		}
	})
}
