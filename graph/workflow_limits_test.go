package graph_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/client"
	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// The mutations refuse a value over the engine's limits with INVALID_INPUT naming the field the
// client gave, and change nothing: startWorkflow, startWorkflows, updateWorkflow, signalWorkflow,
// submitForm and completeTask.
func TestMutationsRefuseValuesOverTheWorkflowLimits(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		engine := engine.New(store, engine.Options{Logger: log, Limits: workflow.Limits{ValueBytes: 100, VariablesBytes: 170}})
		_, err := engine.Register(ctx, testFlow)
		require.NoError(t, err)
		_, err = engine.Register(ctx, workflow.Definition{Type: "limits.form", States: []workflow.State{
			{Name: "start", Kind: workflow.Start, Next: []string{"review"}, Handler: func(workflow.StepContext) (workflow.Next, error) { return workflow.MoveTo("review"), nil }},
			{Name: "review", Kind: workflow.Manual, Next: []string{"done"}, FormSchema: json.RawMessage(`{"type": "object"}`)},
			{Name: "done", Kind: workflow.End},
		}})
		require.NoError(t, err)
		h := server.New(server.Config{Engine: engine, Logger: log, AllowedHosts: testHosts})
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		b := &bundle{store: store, engine: engine, handler: h, srv: srv, c: client.New(h, client.Path("/graphql"))}

		big := map[string]any{"a": strings.Repeat("x", 120)}
		mid := strings.Repeat("m", 90)
		refused := func(field, query string, vars map[string]any) {
			t.Helper()
			e := b.fails(t, "INVALID_INPUT", query, vars)
			require.Equal(t, field, e.Extensions["field"], e.Message)
			require.Contains(t, e.Message, "--max-")
		}
		refused("input", `mutation($v: JSON) { startWorkflow(input: {type: "test.flow", input: $v}) { workflow { id } } }`, map[string]any{"v": big})
		refused("variables", `mutation($v: JSON) { startWorkflow(input: {type: "test.flow", variables: $v}) { workflow { id } } }`, map[string]any{"v": big})
		refused("workflows[1].input", `mutation($v: JSON) { startWorkflows(input: {workflows: [{type: "test.flow"}, {type: "test.flow", input: $v}]}) { results { workflow { id } } } }`,
			map[string]any{"v": big})
		n, err := store.WorkflowCount(ctx, persistence.WorkflowFilter{})
		require.NoError(t, err)
		require.Zero(t, n, "nothing started")

		var started struct {
			StartWorkflow struct{ Workflow struct{ ID string } }
		}
		b.must(t, `mutation($v: JSON) { startWorkflow(input: {type: "limits.form", variables: $v}) { workflow { id } } }`, &started, map[string]any{"v": map[string]any{"a": mid}})
		id := started.StartWorkflow.Workflow.ID
		refused("variables", `mutation($id: ID!, $v: JSON) { updateWorkflow(input: {id: $id, variables: $v}) { workflow { id } } }`, map[string]any{"id": id, "v": big})
		refused("variables", `mutation($id: ID!, $v: JSON) { updateWorkflow(input: {id: $id, variables: $v}) { workflow { id } } }`,
			map[string]any{"id": id, "v": map[string]any{"b": mid, "c": mid}})
		refused("payload", `mutation($id: ID!, $v: JSON) { signalWorkflow(input: {id: $id, name: "s", payload: $v}) { workflow { id } } }`, map[string]any{"id": id, "v": big})
		var moved map[string]any
		b.must(t, `mutation($id: ID!) { updateWorkflow(input: {id: $id, state: "review"}) { workflow { id } } }`, &moved, map[string]any{"id": id})
		refused("data", `mutation($id: ID!, $v: JSON!) { submitForm(input: {id: $id, data: $v, submittedBy: "ann"}) { workflow { id } } }`, map[string]any{"id": id, "v": big})
		w := newestWorkflow(t, store)
		require.JSONEq(t, `{"a":"`+mid+`"}`, string(w.Variables), "nothing changed")
		require.Equal(t, persistence.StatusManual, w.Status)

		addTask(t, b, "f")
		var p polled
		b.must(t, pollQuery, &p, map[string]any{"in": map[string]any{"functions": []string{"f"}}})
		require.Len(t, p.PollTasks.Tasks, 1)
		refused("output", `mutation($in: CompleteTaskInput!) { completeTask(input: $in) { id } }`,
			map[string]any{"in": map[string]any{"token": p.PollTasks.Tasks[0].Token, "output": big}})
	})
}
