package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph"
	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

const completeTasksQuery = `mutation($r: [CompleteTaskInput!]!) { completeTasks(input: {results: $r}) { results { id status code } } }`

type completedTasks struct {
	CompleteTasks struct {
		Results []struct {
			ID     string
			Status *string
			Code   *string
		}
	}
}

// completeTasks ends many tasks in one call: bad input refuses the whole call and writes nothing;
// a stale token is CONFLICT in its own item, and the other results are written.
func TestCompleteTasks(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		for range 3 {
			addTask(t, b, "f")
		}
		var p polled
		b.must(t, pollQuery, &p, map[string]any{"in": map[string]any{"functions": []string{"f"}, "max": 10}})
		require.Len(t, p.PollTasks.Tasks, 3)
		tasks := p.PollTasks.Tasks
		result := func(token string, output any) map[string]any { return map[string]any{"token": token, "output": output} }

		e := b.fails(t, "INVALID_INPUT", completeTasksQuery, map[string]any{"r": []any{}})
		require.Equal(t, "results", e.Extensions["field"])
		big := strings.Repeat("x", 600<<10)
		e = b.fails(t, "INVALID_INPUT", completeTasksQuery, map[string]any{"r": []any{result(tasks[0].Token, 1), result(tasks[1].Token, big)}})
		require.Equal(t, "results[1].output", e.Extensions["field"])
		e = b.fails(t, "INVALID_INPUT", completeTasksQuery, map[string]any{"r": []any{result(tasks[0].Token, 1), result("nonsense", 1)}})
		require.Equal(t, "results[1].token", e.Extensions["field"])
		// Nothing was written: every task is still leased.
		for _, task := range tasks {
			var hb struct{ HeartbeatTask struct{ Deadline string } }
			b.must(t, `mutation($t: String!) { heartbeatTask(input: {token: $t}) { deadline } }`, &hb, map[string]any{"t": task.Token})
		}

		var done completedTasks
		b.must(t, completeTasksQuery, &done, map[string]any{"r": []any{result(tasks[0].Token, map[string]any{"y": 1}), result(tasks[1].Token, 2)}})
		require.Len(t, done.CompleteTasks.Results, 2)
		for i, item := range done.CompleteTasks.Results {
			require.Equal(t, tasks[i].ID, item.ID)
			require.NotNil(t, item.Status)
			require.Equal(t, "SUCCEEDED", *item.Status)
			require.Nil(t, item.Code)
		}

		// A stale token (already completed) and a token named twice: CONFLICT in their own items.
		done = completedTasks{}
		b.must(t, completeTasksQuery, &done, map[string]any{"r": []any{result(tasks[0].Token, 9), result(tasks[2].Token, "first"), result(tasks[2].Token, "second")}})
		items := done.CompleteTasks.Results
		require.Len(t, items, 3)
		require.Equal(t, []string{tasks[0].ID, tasks[2].ID, tasks[2].ID}, []string{items[0].ID, items[1].ID, items[2].ID})
		require.Nil(t, items[0].Status)
		require.Equal(t, "CONFLICT", *items[0].Code)
		require.Equal(t, "SUCCEEDED", *items[1].Status)
		require.Nil(t, items[2].Status)
		require.Equal(t, "CONFLICT", *items[2].Code)

		var outputs []string
		require.NoError(t, store.DB().NewSelect().Table("remote_tasks").ColumnExpr("output").OrderExpr("id").Scan(context.Background(), &outputs))
		got := make([]any, len(outputs))
		for i, o := range outputs {
			require.NoError(t, json.Unmarshal([]byte(o), &got[i]))
		}
		require.Equal(t, []any{map[string]any{"y": float64(1)}, float64(2), "first"}, got)
	})
}

// A worker token may complete its functions' tasks in a batch, and no other function's.
func TestCompleteTasksWorkerToken(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		fns := "f"
		require.NoError(t, store.APITokenInsert(ctx, &persistence.APIToken{Name: "ops", Hash: persistence.HashToken("admin-secret"), Role: graph.RoleAdmin}))
		require.NoError(t, store.APITokenInsert(ctx, &persistence.APIToken{Name: "py", Hash: persistence.HashToken("worker-secret"), Role: graph.RoleWorker, Functions: &fns}))
		b := setup(t, store, func(c *server.Config) { c.Authenticate = server.StoreAuthenticator(store) })
		addTask(t, b, "f")
		addTask(t, b, "g")
		const worker, admin = "Bearer worker-secret", "Bearer admin-secret"
		_, resp := postAs(t, b, admin, `mutation { pollTasks(input: {functions: ["g"]}) { tasks { token } } }`)
		require.Empty(t, resp.Errors)
		var g struct {
			PollTasks struct{ Tasks []struct{ Token string } }
		}
		require.NoError(t, json.Unmarshal(resp.Data, &g))
		_, resp = postAs(t, b, worker, `mutation { pollTasks(input: {functions: ["f"]}) { tasks { token } } }`)
		require.Empty(t, resp.Errors)
		var f struct {
			PollTasks struct{ Tasks []struct{ Token string } }
		}
		require.NoError(t, json.Unmarshal(resp.Data, &f))
		require.Len(t, f.PollTasks.Tasks, 1)
		require.Len(t, g.PollTasks.Tasks, 1)

		_, resp = postAs(t, b, worker, fmt.Sprintf(`mutation { completeTasks(input: {results: [{token: %q, output: 1}, {token: %q, output: 2}]}) { results { id } } }`,
			f.PollTasks.Tasks[0].Token, g.PollTasks.Tasks[0].Token))
		require.NotEmpty(t, resp.Errors)
		require.Equal(t, "FORBIDDEN", resp.Errors[0].Extensions["code"])
		require.Equal(t, "results[1].token", resp.Errors[0].Extensions["field"])

		_, resp = postAs(t, b, worker, fmt.Sprintf(`mutation { completeTasks(input: {results: [{token: %q, output: 1}]}) { results { status code } } }`,
			f.PollTasks.Tasks[0].Token))
		require.Empty(t, resp.Errors)
		require.Contains(t, string(resp.Data), `"status":"SUCCEEDED"`)
	})
}

// A poll reads the tasks' workflows only when it asks for more of them than their IDs.
func TestPollReadsWorkflowsOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		addTask(t, b, "f")
		counter := &statementCounter{}
		store.DB().AddQueryHook(counter) //lint:ignore SA1019 the hook must see the statements of this very DB, not of a copy
		readsWorkflows := func(stmts []string) bool {
			for _, s := range stmts {
				if strings.Contains(s, `FROM "workflows"`) || strings.Contains(s, "FROM `workflows`") {
					return true
				}
			}
			return false
		}
		var p polled
		stmts := counter.count(func() {
			b.must(t, pollQuery, &p, map[string]any{"in": map[string]any{"functions": []string{"f"}, "max": 10}})
		})
		require.Len(t, p.PollTasks.Tasks, 1)
		require.NotEmpty(t, p.PollTasks.Tasks[0].Workflow.ID)
		require.False(t, readsWorkflows(stmts), "%q", stmts)

		addTask(t, b, "f")
		var full struct {
			PollTasks struct {
				Tasks []struct {
					Workflow struct{ ID, Type, Status string }
				}
			}
		}
		stmts = counter.count(func() {
			b.must(t, `mutation { pollTasks(input: {functions: ["f"]}) { tasks { workflow { id type status } } } }`, &full, nil)
		})
		require.Len(t, full.PollTasks.Tasks, 1)
		require.Equal(t, "test.flow", full.PollTasks.Tasks[0].Workflow.Type)
		require.NotEmpty(t, full.PollTasks.Tasks[0].Workflow.Status)
		require.True(t, readsWorkflows(stmts), "%q", stmts)
	})
}
