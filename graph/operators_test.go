package graph_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph"
	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

type auditPage struct {
	AuditLog struct {
		Items []struct {
			ID, At, Actor, Action string
			Subject, Reason       *string
			Details               json.RawMessage
		}
		EndCursor   *string
		HasNextPage bool
	}
}

func TestActorsAndTheAuditLog(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		require.NoError(t, store.APITokenInsert(ctx, &persistence.APIToken{Name: "ops", Hash: persistence.HashToken("admin-secret"), Role: graph.RoleAdmin}))
		b := setup(t, store, func(c *server.Config) { c.Authenticate = server.StoreAuthenticator(store) })
		const admin = "Bearer admin-secret"
		data := func(query string) map[string]any {
			t.Helper()
			_, resp := postAs(t, b, admin, query)
			require.Empty(t, resp.Errors)
			var out map[string]any
			require.NoError(t, json.Unmarshal(resp.Data, &out))
			return out
		}
		started := data(`mutation { startWorkflow(input: {type: "test.flow", businessKey: "audited"}) { workflow { id } } }`)
		id := started["startWorkflow"].(map[string]any)["workflow"].(map[string]any)["id"].(string)
		data(`mutation { pauseWorkflow(input: {id: "` + id + `", reason: "look first"}) { workflow { id } } }`)
		hist := data(`{ workflow(id: "` + id + `") { actions(first: 5) { edges { node { actor stateText } } } } }`)
		edges := hist["workflow"].(map[string]any)["actions"].(map[string]any)["edges"].([]any)
		require.Len(t, edges, 1)
		node := edges[0].(map[string]any)["node"].(map[string]any)
		require.Equal(t, "ops", node["actor"], "the token's name")
		require.Equal(t, "pause: look first", node["stateText"])

		bulk := data(`mutation { startBulkOperation(input: {action: RESUME, filter: {businessKey: "audited"}, reason: "all clear"}) { bulkOperation { id actor } } }`)
		op := bulk["startBulkOperation"].(map[string]any)["bulkOperation"].(map[string]any)
		require.Equal(t, "ops", op["actor"])
		data(`mutation { startBulkOperation(input: {action: RESUME, filter: {businessKey: "audited"}, dryRun: true}) { bulkOperation { id } } }`)
		sched := data(`mutation { createSchedule(input: {type: "test.flow", cron: "@daily"}) { schedule { id } } }`)
		schedID := sched["createSchedule"].(map[string]any)["schedule"].(map[string]any)["id"].(string)
		data(`mutation { setSchedulePaused(input: {id: "` + schedID + `", paused: true}) { schedule { id } } }`)

		var page auditPage
		raw, err := json.Marshal(data(`{ auditLog(filter: {actor: "ops"}) { items { id at actor action subject reason details } endCursor hasNextPage } }`))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &page))
		items := page.AuditLog.Items
		require.Len(t, items, 3, "the single-workflow pause is in its history, a dry run changes nothing")
		require.Equal(t, "setSchedulePaused", items[0].Action)
		require.Equal(t, schedID, *items[0].Subject)
		require.Equal(t, "createSchedule", items[1].Action)
		require.Equal(t, "startBulkOperation", items[2].Action)
		require.Equal(t, op["id"], *items[2].Subject)
		require.Equal(t, "all clear", *items[2].Reason)
		require.JSONEq(t, `"RESUME"`, string(mustField(t, items[2].Details, "action")))
		for _, it := range items {
			require.Equal(t, "ops", it.Actor)
		}
		require.False(t, page.AuditLog.HasNextPage)

		raw, err = json.Marshal(data(`{ auditLog(first: 2) { items { id action } endCursor hasNextPage } }`))
		require.NoError(t, err)
		page = auditPage{}
		require.NoError(t, json.Unmarshal(raw, &page))
		require.Len(t, page.AuditLog.Items, 2)
		require.True(t, page.AuditLog.HasNextPage)
		raw, err = json.Marshal(data(`{ auditLog(first: 2, after: "` + *page.AuditLog.EndCursor + `") { items { id action } hasNextPage } }`))
		require.NoError(t, err)
		page = auditPage{}
		require.NoError(t, json.Unmarshal(raw, &page))
		require.Len(t, page.AuditLog.Items, 1)
		require.Equal(t, "startBulkOperation", page.AuditLog.Items[0].Action)

		for _, q := range []string{`{ auditLog(filter: {actor: "nobody"}) { items { id } } }`,
			`{ auditLog(filter: {since: "2999-01-01T00:00:00Z"}) { items { id } } }`,
			`{ auditLog(filter: {until: "2000-01-01T00:00:00Z"}) { items { id } } }`} {
			got := data(q)["auditLog"].(map[string]any)["items"].([]any)
			require.Empty(t, got, q)
		}
		_, resp := postAs(t, b, admin, `{ auditLog(first: 0) { items { id } } }`)
		require.Equal(t, "INVALID_INPUT", resp.Errors[0].Extensions["code"])
		require.Equal(t, "first", resp.Errors[0].Extensions["field"])
	})
}

func mustField(t *testing.T, raw json.RawMessage, key string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m))
	return m[key]
}

func TestRerunAndDelete(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		b := setup(t, store)
		orig := b.start(t, map[string]any{"businessKey": "rerun-me", "input": map[string]any{"x": 1}})
		rerun := `mutation($in: RerunWorkflowInput!) { rerunWorkflow(input: $in) { workflow { id type status state businessKey input rerunOf { id } } } }`
		del := `mutation($id: ID!) { deleteWorkflow(input: {id: $id, reason: "test data"}) { id deleted } }`
		cancel := `mutation($id: ID!) { cancelWorkflow(input: {id: $id}) { workflow { id } } }`

		b.fails(t, "CONFLICT", rerun, map[string]any{"in": map[string]any{"id": orig}})
		b.fails(t, "CONFLICT", del, map[string]any{"id": orig})
		var out map[string]any
		b.must(t, cancel, &out, map[string]any{"id": orig})

		type rerunResp struct {
			RerunWorkflow struct {
				Workflow struct {
					ID, Type, Status, State string
					BusinessKey             *string
					Input                   map[string]any
					RerunOf                 *struct{ ID string }
				}
			}
		}
		var same rerunResp
		b.must(t, rerun, &same, map[string]any{"in": map[string]any{"id": orig}})
		w := same.RerunWorkflow.Workflow
		require.NotEqual(t, orig, w.ID)
		require.Equal(t, "test.flow", w.Type)
		require.Equal(t, "start", w.State)
		require.Equal(t, "CREATED", w.Status)
		require.Equal(t, "rerun-me", *w.BusinessKey)
		require.Equal(t, map[string]any{"x": float64(1)}, w.Input, "the same input")
		require.Equal(t, orig, w.RerunOf.ID)

		var changed rerunResp
		b.must(t, rerun, &changed, map[string]any{"in": map[string]any{"id": orig, "input": map[string]any{"x": 2}, "state": "review"}})
		w2 := changed.RerunWorkflow.Workflow
		require.Equal(t, map[string]any{"x": float64(2)}, w2.Input, "a new input")
		require.Equal(t, "review", w2.State)
		require.Equal(t, "MANUAL", w2.Status)

		var links struct {
			Workflow struct{ Reruns []struct{ ID string } }
		}
		b.must(t, `query($id: ID!) { workflow(id: $id) { reruns { id } } }`, &links, map[string]any{"id": orig})
		require.Equal(t, []struct{ ID string }{{w.ID}, {w2.ID}}, links.Workflow.Reruns)

		for _, c := range []struct {
			in          map[string]any
			code, field string
		}{
			{map[string]any{"id": orig, "state": "done"}, "INVALID_INPUT", "state"},
			{map[string]any{"id": orig, "state": "nope"}, "INVALID_INPUT", "state"},
			{map[string]any{"id": orig, "input": []int{1}}, "INVALID_INPUT", "input"},
			{map[string]any{"id": "nope"}, "INVALID_INPUT", "id"},
			{map[string]any{"id": base64.RawURLEncoding.EncodeToString([]byte("Workflow:999999"))}, "NOT_FOUND", "id"},
		} {
			e := b.fails(t, c.code, rerun, map[string]any{"in": c.in})
			require.Equal(t, c.field, e.Extensions["field"], "%v", c.in)
		}

		// Deleting: a running rerun is refused; once cancelled it goes with its history.
		b.fails(t, "CONFLICT", del, map[string]any{"id": w.ID})
		b.must(t, cancel, &out, map[string]any{"id": w.ID})
		var deleted struct {
			DeleteWorkflow struct {
				ID      string
				Deleted bool
			}
		}
		b.must(t, del, &deleted, map[string]any{"id": w.ID})
		require.Equal(t, w.ID, deleted.DeleteWorkflow.ID)
		require.True(t, deleted.DeleteWorkflow.Deleted)
		var gone struct{ Workflow *struct{ ID string } }
		b.must(t, `query($id: ID!) { workflow(id: $id) { id } }`, &gone, map[string]any{"id": w.ID})
		require.Nil(t, gone.Workflow)
		b.fails(t, "NOT_FOUND", del, map[string]any{"id": w.ID})
		b.must(t, `query($id: ID!) { workflow(id: $id) { reruns { id } } }`, &links, map[string]any{"id": orig})
		require.Equal(t, []struct{ ID string }{{w2.ID}}, links.Workflow.Reruns)
		newest := newestWorkflow(t, store)
		actions, err := store.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: []int64{newest.ID - 1}})
		require.NoError(t, err)
		require.Empty(t, actions, "its history went with it")

		// The original deleted: its rerun stays, linked to nothing.
		b.must(t, del, &deleted, map[string]any{"id": orig})
		var orphan struct {
			Workflow struct{ RerunOf *struct{ ID string } }
		}
		b.must(t, `query($id: ID!) { workflow(id: $id) { rerunOf { id } } }`, &orphan, map[string]any{"id": w2.ID})
		require.Nil(t, orphan.Workflow.RerunOf)

		var page auditPage
		b.must(t, `{ auditLog { items { id at actor action subject reason } hasNextPage } }`, &page, nil)
		var acts []string
		for _, it := range page.AuditLog.Items {
			require.Equal(t, "anonymous", it.Actor)
			acts = append(acts, it.Action)
		}
		require.Equal(t, []string{"deleteWorkflow", "deleteWorkflow", "rerunWorkflow", "rerunWorkflow"}, acts)
		require.Equal(t, orig, *page.AuditLog.Items[0].Subject)
		require.Equal(t, "test data", *page.AuditLog.Items[0].Reason)
	})
}
