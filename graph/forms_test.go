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

func TestSubmitForm(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		_, err := b.engine.Register(context.Background(), workflow.Definition{Type: "form.flow", States: []workflow.State{
			{Name: "start", Kind: workflow.Start, Next: []string{"review"}, Handler: func(workflow.StepContext) (workflow.Next, error) { return workflow.MoveTo("review"), nil }},
			{Name: "review", Kind: workflow.Manual, Next: []string{"done"},
				FormSchema: json.RawMessage(`{"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}`)},
			{Name: "done", Kind: workflow.End},
		}})
		require.NoError(t, err)
		var started struct {
			StartWorkflow struct{ Workflow struct{ ID string } }
		}
		b.must(t, `mutation { startWorkflow(input: {type: "form.flow"}) { workflow { id } } }`, &started, nil)
		id := started.StartWorkflow.Workflow.ID
		const submit = `mutation($id: ID!, $data: JSON!) { submitForm(input: {id: $id, data: $data, submittedBy: "ann", signature: "s1"}) { workflow { status state variables formSubmissions { id state data submittedBy signature } } } }`

		b.fails(t, "CONFLICT", submit, map[string]any{"id": id, "data": map[string]any{"ok": true}})
		var moved map[string]any
		b.must(t, `mutation($id: ID!) { updateWorkflow(input: {id: $id, state: "review"}) { workflow { status } } }`, &moved, map[string]any{"id": id})
		e := b.fails(t, "INVALID_INPUT", submit, map[string]any{"id": id, "data": map[string]any{"ok": "yes"}})
		require.Equal(t, "data", e.Extensions["field"])
		b.fails(t, "INVALID_INPUT", submit, map[string]any{"id": id, "data": []int{1}})

		var out struct {
			SubmitForm struct {
				Workflow struct {
					Status, State   string
					Variables       map[string]any
					FormSubmissions []struct {
						ID, State, SubmittedBy, Signature string
						Data                              map[string]any
					}
				}
			}
		}
		b.must(t, submit, &out, map[string]any{"id": id, "data": map[string]any{"ok": true}})
		w := out.SubmitForm.Workflow
		require.Equal(t, "FINISHED", w.Status)
		require.Equal(t, "done", w.State)
		require.Equal(t, map[string]any{"ok": true}, w.Variables["review"])
		require.Len(t, w.FormSubmissions, 1)
		require.Equal(t, "review", w.FormSubmissions[0].State)
		require.Equal(t, "s1", w.FormSubmissions[0].Signature)
		require.NotEmpty(t, w.FormSubmissions[0].ID)
	})
}
