package engine_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

var leaveForm = json.RawMessage(`{"type": "object", "required": ["days"], "properties": {"days": {"type": "integer", "minimum": 1}}}`)

// leaveRequest waits for a form in a WAIT state, then for a manager's form in a MANUAL state.
var leaveRequest = workflow.Definition{Type: "leave.request", States: []workflow.State{
	{Name: "ask", Kind: workflow.Start, Next: []string{"fill"}, Handler: func(workflow.StepContext) (workflow.Next, error) { return workflow.MoveTo("fill"), nil }},
	{Name: "fill", Kind: workflow.Wait, WaitFor: &workflow.WaitFor{Signal: "leave"}, FormSchema: leaveForm, Next: []string{"decide"}},
	{Name: "decide", Kind: workflow.Manual, FormSchema: json.RawMessage(`{"type": "object", "required": ["approved"]}`), Next: []string{"done"}},
	{Name: "done", Kind: workflow.End},
}}

func TestFormSubmissions(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		_, err := engine.Register(ctx, leaveRequest)
		require.NoError(t, err)
		res, err := engine.Start(ctx, workflow.StartParams{Type: "leave.request"})
		require.NoError(t, err)
		id := res.Workflow.ID
		submit := func(data string) (*persistence.Workflow, error) {
			return engine.SubmitForm(ctx, workflow.SubmitFormParams{ID: id, Data: json.RawMessage(data), SubmittedBy: "ann"})
		}
		_, err = submit(`{"days": 3}`)
		requireCode(t, err, workflow.CodeConflict, "")

		w, err := engine.Update(ctx, workflow.UpdateParams{ChangeParams: workflow.ChangeParams{ID: id}, State: ptr("fill")})
		require.NoError(t, err)
		require.Equal(t, persistence.StatusWaiting, w.Status)
		_, err = submit(`{"days": 0}`)
		requireCode(t, err, workflow.CodeInvalidInput, "data")
		_, err = submit(`[1]`)
		requireCode(t, err, workflow.CodeInvalidInput, "data")
		_, err = engine.SubmitForm(ctx, workflow.SubmitFormParams{ID: id, Data: json.RawMessage(`{"days": 2}`)})
		requireCode(t, err, workflow.CodeInvalidInput, "submittedBy")
		forms, err := store.FormSubmissionList(ctx, id)
		require.NoError(t, err)
		require.Empty(t, forms, "refused submissions store nothing")

		w, err = submit(`{"days": 3}`)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusInProgress, w.Status, "the form releases the waiting state")
		require.JSONEq(t, `{"fill": {"days": 3}}`, string(w.Variables))
		sigs, err := store.SignalList(ctx, []int64{id})
		require.NoError(t, err)
		require.Len(t, sigs, 1)
		require.Equal(t, "leave", sigs[0].Name)

		// A MANUAL state with a form moves on to its only next state.
		w, err = engine.Update(ctx, workflow.UpdateParams{ChangeParams: workflow.ChangeParams{ID: id}, State: ptr("decide")})
		require.NoError(t, err)
		require.Equal(t, persistence.StatusManual, w.Status)
		w, err = engine.SubmitForm(ctx, workflow.SubmitFormParams{ID: id, Data: json.RawMessage(`{"approved": true}`), SubmittedBy: "boss", Signature: "sig"})
		require.NoError(t, err)
		require.Equal(t, persistence.StatusFinished, w.Status)
		require.Equal(t, "done", w.State)
		forms, err = store.FormSubmissionList(ctx, id)
		require.NoError(t, err)
		require.Len(t, forms, 2)
		require.Equal(t, "boss", forms[1].SubmittedBy)
		require.Equal(t, "sig", *forms[1].Signature)
	})
}

func TestFormSchemasAreCheckedAtRegistration(t *testing.T) {
	t.Parallel()
	bad := leaveRequest
	bad.Type = "leave.bad"
	bad.States = append([]workflow.State(nil), leaveRequest.States...)
	bad.States[1].FormSchema = json.RawMessage(`{"type": "no-such-type"}`)
	err := bad.Validate()
	require.Error(t, err)
	require.Contains(t, err.Error(), `state "fill": form schema`)
}
