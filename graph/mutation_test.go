package graph_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

const workflowFields = `workflow { id status state stateText nextActivation variables retries }`

type wfPayload struct {
	ID             string
	Status         string
	State          string
	StateText      *string
	NextActivation *string
	Variables      map[string]any
	Retries        int
}

func TestStartWorkflowIdempotentAndValidated(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		start := `mutation($in: StartWorkflowInput!) { startWorkflow(input: $in) { created workflow { id type status state externalId businessKey priority input variables } } }`
		var first, again struct {
			StartWorkflow struct {
				Created  bool
				Workflow struct {
					ID, Type, Status, State string
					ExternalID, BusinessKey *string
					Priority                int
					Input, Variables        map[string]any
				}
			}
		}
		in := map[string]any{"type": "test.flow", "externalId": "order-1", "businessKey": "bk", "priority": 3,
			"input": map[string]any{"n": 1}, "variables": map[string]any{"v": "x"}, "idempotencyKey": "k1"}
		b.must(t, start, &first, map[string]any{"in": in})
		require.True(t, first.StartWorkflow.Created)
		w := first.StartWorkflow.Workflow
		require.Equal(t, "test.flow", w.Type)
		require.Equal(t, "CREATED", w.Status)
		require.Equal(t, "start", w.State)
		require.Equal(t, "order-1", *w.ExternalID)
		require.Equal(t, 3, w.Priority)
		require.Equal(t, map[string]any{"n": float64(1)}, w.Input)
		require.Equal(t, map[string]any{"v": "x"}, w.Variables)

		b.must(t, start, &again, map[string]any{"in": in})
		require.False(t, again.StartWorkflow.Created, "the same key returns the first result")
		require.Equal(t, w.ID, again.StartWorkflow.Workflow.ID)
		delete(in, "idempotencyKey")
		b.must(t, start, &again, map[string]any{"in": in})
		require.False(t, again.StartWorkflow.Created, "the same external ID returns the existing workflow")
		require.Equal(t, w.ID, again.StartWorkflow.Workflow.ID)

		e := b.fails(t, "INVALID_INPUT", start, map[string]any{"in": map[string]any{"type": "test.flow", "input": []any{1, 2}}})
		require.Equal(t, "input", e.Extensions["field"])
		require.Equal(t, []any{"startWorkflow"}, e.Path)
		e = b.fails(t, "INVALID_INPUT", start, map[string]any{"in": map[string]any{"type": "test.flow", "variables": "text"}})
		require.Equal(t, "variables", e.Extensions["field"])
		e = b.fails(t, "INVALID_INPUT", start, map[string]any{"in": map[string]any{"type": "no.such.type"}})
		require.Equal(t, "type", e.Extensions["field"])
		b.fails(t, "INVALID_INPUT", start, map[string]any{"in": map[string]any{"type": "test.flow", "startAt": "yesterday"}})

		n, err := store.WorkflowCount(t.Context(), persistence.WorkflowFilter{})
		require.NoError(t, err)
		require.Equal(t, 1, n, "refused starts started nothing")

		var offline struct {
			SetDefinitionReleaseState struct {
				Definition struct{ Type, ReleaseState string }
			}
		}
		b.must(t, `mutation { setDefinitionReleaseState(input: {type: "test.flow", releaseState: OFFLINE}) { definition { type releaseState } } }`, &offline, nil)
		require.Equal(t, "OFFLINE", offline.SetDefinitionReleaseState.Definition.ReleaseState)
		b.fails(t, "CONFLICT", start, map[string]any{"in": map[string]any{"type": "test.flow"}})
		b.fails(t, "NOT_FOUND", `mutation { setDefinitionReleaseState(input: {type: "nope", releaseState: ONLINE}) { definition { type } } }`, nil)
	})
}

func TestStartWorkflowsAllOrNothing(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		many := `mutation($in: StartWorkflowsInput!) { startWorkflows(input: $in) { results { created workflow { id businessKey } } } }`
		var resp struct {
			StartWorkflows struct {
				Results []struct {
					Created  bool
					Workflow struct {
						ID          string
						BusinessKey string
					}
				}
			}
		}
		inputs := []any{}
		for _, bk := range []string{"a", "b", "c"} {
			inputs = append(inputs, map[string]any{"type": "test.flow", "businessKey": bk})
		}
		b.must(t, many, &resp, map[string]any{"in": map[string]any{"workflows": inputs}})
		require.Len(t, resp.StartWorkflows.Results, 3)
		for i, r := range resp.StartWorkflows.Results {
			require.True(t, r.Created)
			require.Equal(t, []string{"a", "b", "c"}[i], r.Workflow.BusinessKey)
		}
		bad := append(inputs, map[string]any{"type": "test.flow", "input": 5})
		e := b.fails(t, "INVALID_INPUT", many, map[string]any{"in": map[string]any{"workflows": bad}})
		require.Equal(t, "workflows[3].input", e.Extensions["field"])
		n, err := store.WorkflowCount(t.Context(), persistence.WorkflowFilter{})
		require.NoError(t, err)
		require.Equal(t, 3, n, "a refused batch starts nothing")
	})
}

func TestOperationsAndTheirErrors(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		id := b.start(t, nil)
		op := func(name, input string) string {
			return `mutation($id: ID!) { ` + name + `(input: {id: $id` + input + `}) { ` + workflowFields + ` } }`
		}
		run := func(name, input string, wid string) wfPayload {
			var resp map[string]struct{ Workflow wfPayload }
			b.must(t, op(name, input), &resp, map[string]any{"id": wid})
			return resp[name].Workflow
		}

		// Unknown and malformed IDs.
		gone := b.start(t, map[string]any{"externalId": "gone"})
		run("cancelWorkflow", "", gone)
		for _, name := range []string{"pauseWorkflow", "resumeWorkflow", "cancelWorkflow", "wakeUpWorkflow", "retryWorkflow"} {
			e := b.fails(t, "INVALID_INPUT", op(name, ""), map[string]any{"id": "not-an-id"})
			require.Equal(t, "id", e.Extensions["field"], name)
		}
		var resp struct{ Node *struct{ ID string } }
		b.must(t, `query($id: ID!) { node(id: $id) { id } }`, &resp, map[string]any{"id": id})
		require.NotNil(t, resp.Node)

		// Pause, conflicts while paused, resume; idempotency keys change once.
		require.Equal(t, "PAUSED", run("pauseWorkflow", `, reason: "look", idempotencyKey: "p1"`, id).Status)
		require.Equal(t, "PAUSED", run("pauseWorkflow", `, reason: "look", idempotencyKey: "p1"`, id).Status, "same key: unchanged, no error")
		reused := b.fails(t, "CONFLICT", op("pauseWorkflow", `, reason: "another", idempotencyKey: "p1"`), map[string]any{"id": id})
		require.Equal(t, "idempotencyKey", reused.Extensions["field"], "same key, another request")
		b.fails(t, "CONFLICT", op("pauseWorkflow", ""), map[string]any{"id": id})
		b.fails(t, "CONFLICT", op("wakeUpWorkflow", ""), map[string]any{"id": id})
		b.fails(t, "CONFLICT", op("retryWorkflow", ""), map[string]any{"id": id})
		require.Equal(t, "IN_PROGRESS", run("resumeWorkflow", "", id).Status)
		b.fails(t, "CONFLICT", op("resumeWorkflow", ""), map[string]any{"id": id})
		require.Equal(t, "IN_PROGRESS", run("wakeUpWorkflow", "", id).Status)

		// Update: state, text, schedule, variables; bad state and non-object variables refused.
		w := run("updateWorkflow", `, state: "review", stateText: "needs eyes", variables: {a: 1, b: "x"}, reason: "ops"`, id)
		require.Equal(t, "MANUAL", w.Status)
		require.Equal(t, "review", w.State)
		require.Equal(t, "needs eyes", *w.StateText)
		require.Equal(t, map[string]any{"a": float64(1), "b": "x"}, w.Variables)
		w = run("updateWorkflow", `, variables: {b: null}`, id)
		require.Equal(t, map[string]any{"a": float64(1)}, w.Variables, "null removes a key")
		e := b.fails(t, "INVALID_INPUT", op("updateWorkflow", `, state: "nowhere"`), map[string]any{"id": id})
		require.Equal(t, "state", e.Extensions["field"])
		e = b.fails(t, "INVALID_INPUT", op("updateWorkflow", `, variables: [1, 2]`), map[string]any{"id": id})
		require.Equal(t, "variables", e.Extensions["field"])
		b.fails(t, "INVALID_INPUT", op("updateWorkflow", ``), map[string]any{"id": id})
		b.fails(t, "INVALID_INPUT", op("updateWorkflow", `, nextActivation: "not a time"`), map[string]any{"id": id})

		// Retry a MANUAL workflow: a bad state is refused, a good one runs again.
		e = b.fails(t, "INVALID_INPUT", op("retryWorkflow", `, state: "nowhere"`), map[string]any{"id": id})
		require.Equal(t, "state", e.Extensions["field"])
		w = run("retryWorkflow", `, state: "work", idempotencyKey: "r1"`, id)
		require.Equal(t, "IN_PROGRESS", w.Status)
		require.Equal(t, "work", w.State)
		require.Equal(t, "IN_PROGRESS", run("retryWorkflow", `, state: "work", idempotencyKey: "r1"`, id).Status, "same key")

		// Signals: idempotent, refused on ended workflows, name required.
		sig := `mutation($id: ID!, $key: String) { signalWorkflow(input: {id: $id, name: "approve", payload: {ok: true}, idempotencyKey: $key}) { workflow { id signals { name payload idempotencyKey consumed } } } }`
		var sresp struct {
			SignalWorkflow struct {
				Workflow struct {
					ID      string
					Signals []struct {
						Name           string
						Payload        map[string]any
						IdempotencyKey *string
						Consumed       *string
					}
				}
			}
		}
		b.must(t, sig, &sresp, map[string]any{"id": id, "key": "s1"})
		b.must(t, sig, &sresp, map[string]any{"id": id, "key": "s1"})
		require.Len(t, sresp.SignalWorkflow.Workflow.Signals, 1, "the same key delivers once")
		require.Equal(t, map[string]any{"ok": true}, sresp.SignalWorkflow.Workflow.Signals[0].Payload)
		b.fails(t, "CONFLICT", sig, map[string]any{"id": gone})
		b.fails(t, "INVALID_INPUT", `mutation($id: ID!) { signalWorkflow(input: {id: $id, name: ""}) { workflow { id } } }`, map[string]any{"id": id})

		// Cancel: once, then conflicts.
		require.Equal(t, "CANCELLED", run("cancelWorkflow", `, reason: "done with it"`, id).Status)
		b.fails(t, "CONFLICT", op("cancelWorkflow", ""), map[string]any{"id": id})
		b.fails(t, "CONFLICT", op("pauseWorkflow", ""), map[string]any{"id": id})

		// The history holds one action per change (the repeated idempotent calls added none).
		var hist struct {
			Workflow struct {
				Actions struct {
					TotalCount int
					Nodes      []struct {
						Type, State string
						Actor       *string
						StateText   *string
					}
				}
			}
		}
		b.must(t, `query($id: ID!) { workflow(id: $id) { actions(first: 50) { totalCount nodes { type state actor stateText } } } }`, &hist, map[string]any{"id": id})
		// pause, resume, wakeUp, update x2, retry, cancel
		require.Equal(t, 7, hist.Workflow.Actions.TotalCount)
		require.Len(t, hist.Workflow.Actions.Nodes, 7)
		for _, a := range hist.Workflow.Actions.Nodes {
			require.Equal(t, "EXTERNAL_CHANGE", a.Type)
		}
		require.Equal(t, "pause: look", *hist.Workflow.Actions.Nodes[0].StateText)
	})
}

func TestUnknownWorkflowIsNotFound(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		id := b.start(t, nil)
		// Delete the row behind a real ID, so the ID is well-formed but names nothing.
		_, err := store.DB().NewDelete().Model((*persistence.ChangeEvent)(nil)).Where("1 = 1").Exec(t.Context())
		require.NoError(t, err)
		_, err = store.DB().NewDelete().Model((*persistence.Workflow)(nil)).Where("1 = 1").Exec(t.Context())
		require.NoError(t, err)
		for _, m := range []string{
			`mutation($id: ID!) { pauseWorkflow(input: {id: $id}) { workflow { id } } }`,
			`mutation($id: ID!) { resumeWorkflow(input: {id: $id}) { workflow { id } } }`,
			`mutation($id: ID!) { cancelWorkflow(input: {id: $id}) { workflow { id } } }`,
			`mutation($id: ID!) { wakeUpWorkflow(input: {id: $id}) { workflow { id } } }`,
			`mutation($id: ID!) { retryWorkflow(input: {id: $id}) { workflow { id } } }`,
			`mutation($id: ID!) { updateWorkflow(input: {id: $id, stateText: "x"}) { workflow { id } } }`,
			`mutation($id: ID!) { signalWorkflow(input: {id: $id, name: "approve"}) { workflow { id } } }`,
		} {
			e := b.fails(t, "NOT_FOUND", m, map[string]any{"id": id})
			require.Equal(t, "id", e.Extensions["field"], m)
		}
		var resp struct{ Workflow *struct{ ID string } }
		b.must(t, `query($id: ID!) { workflow(id: $id) { id } }`, &resp, map[string]any{"id": id})
		require.Nil(t, resp.Workflow, "a lookup of an unknown ID is null")
	})
}
