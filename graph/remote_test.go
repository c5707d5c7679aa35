package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph"
	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// addTask makes a pending remote task of a function for a new workflow (as a step's call would).
func addTask(t *testing.T, b *bundle, function string) int64 {
	t.Helper()
	res, err := b.engine.Start(context.Background(), workflow.StartParams{Type: "test.flow"})
	require.NoError(t, err)
	task := &persistence.RemoteTask{Function: function, WorkflowID: res.Workflow.ID, State: "work", ExecutorGroup: "default",
		Input: json.RawMessage(`{"x": 1}`), MaxAttempts: 3}
	require.NoError(t, b.store.RemoteTaskCreate(context.Background(), task))
	return task.ID
}

type polled struct {
	PollTasks struct {
		Tasks []struct {
			ID, Token, Function string
			Input               map[string]any
			Attempt             int
			Deadline            string
			Workflow            struct{ ID string }
		}
	}
}

const pollQuery = `mutation($in: PollTasksInput!) { pollTasks(input: $in) { tasks { id token function input attempt deadline workflow { id } } } }`

func TestRemoteTaskMutations(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		addTask(t, b, "f")

		for _, c := range []struct {
			in    map[string]any
			field string
		}{
			{map[string]any{"functions": []string{}}, "functions"},
			{map[string]any{"functions": []string{""}}, "functions[0]"},
			{map[string]any{"functions": []string{"f"}, "max": 0}, "max"},
			{map[string]any{"functions": []string{"f"}, "max": -1}, "max"},
			{map[string]any{"functions": []string{"f"}, "max": 101}, "max"},
			{map[string]any{"functions": []string{"f"}, "leaseMs": 999}, "leaseMs"},
			{map[string]any{"functions": []string{"f"}, "leaseMs": 3600001}, "leaseMs"},
			{map[string]any{"functions": []string{"f"}, "waitMs": -1}, "waitMs"},
			{map[string]any{"functions": []string{"f"}, "waitMs": 60001}, "waitMs"},
		} {
			e := b.fails(t, "INVALID_INPUT", pollQuery, map[string]any{"in": c.in})
			require.Equal(t, c.field, e.Extensions["field"], "%v: %s", c.in, e.Message)
		}

		var p polled
		b.must(t, pollQuery, &p, map[string]any{"in": map[string]any{"functions": []string{"f", "g"}, "max": 10, "worker": "api-test"}})
		require.Len(t, p.PollTasks.Tasks, 1)
		task := p.PollTasks.Tasks[0]
		require.Equal(t, "f", task.Function)
		require.Equal(t, 1, task.Attempt)
		require.Equal(t, map[string]any{"x": float64(1)}, task.Input)
		require.NotEmpty(t, task.Workflow.ID)

		const complete = `mutation($in: CompleteTaskInput!) { completeTask(input: $in) { id status } }`
		big := strings.Repeat("x", 600<<10)
		e := b.fails(t, "INVALID_INPUT", complete, map[string]any{"in": map[string]any{"token": task.Token, "output": big}})
		require.Equal(t, "output", e.Extensions["field"])
		e = b.fails(t, "INVALID_INPUT", complete, map[string]any{"in": map[string]any{"token": "nonsense", "output": 1}})
		require.Equal(t, "token", e.Extensions["field"])
		// Refused output leaves the task leased: the lease still extends.
		var hb struct{ HeartbeatTask struct{ Deadline string } }
		b.must(t, `mutation($t: String!) { heartbeatTask(input: {token: $t}) { deadline } }`, &hb, map[string]any{"t": task.Token})
		require.NotEmpty(t, hb.HeartbeatTask.Deadline)

		var done struct{ CompleteTask struct{ ID, Status string } }
		b.must(t, complete, &done, map[string]any{"in": map[string]any{"token": task.Token, "output": map[string]any{"y": 2}}})
		require.Equal(t, "SUCCEEDED", done.CompleteTask.Status)
		require.Equal(t, task.ID, done.CompleteTask.ID)
		e = b.fails(t, "CONFLICT", complete, map[string]any{"in": map[string]any{"token": task.Token, "output": 3}})
		require.Equal(t, "token", e.Extensions["field"])
		b.fails(t, "CONFLICT", `mutation($in: FailTaskInput!) { failTask(input: $in) { id } }`,
			map[string]any{"in": map[string]any{"token": task.Token, "error": map[string]any{"title": "late"}}})
		b.fails(t, "CONFLICT", `mutation($t: String!) { heartbeatTask(input: {token: $t}) { deadline } }`, map[string]any{"t": task.Token})

		var ws struct {
			RemoteWorkers []struct {
				Name      string
				Functions []string
				LastPoll  string
				TasksHeld int
			}
		}
		b.must(t, `{ remoteWorkers { name functions lastPoll tasksHeld } }`, &ws, nil)
		require.Len(t, ws.RemoteWorkers, 1)
		require.Equal(t, "api-test", ws.RemoteWorkers[0].Name)
		require.Equal(t, []string{"f", "g"}, ws.RemoteWorkers[0].Functions)
		require.Zero(t, ws.RemoteWorkers[0].TasksHeld)
	})
}

// A worker token polls, heartbeats, completes and fails its functions' tasks, and nothing else.
func TestWorkerTokens(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		fns := "f,h"
		require.NoError(t, store.APITokenInsert(ctx, &persistence.APIToken{Name: "ops", Hash: persistence.HashToken("admin-secret"), Role: graph.RoleAdmin}))
		require.NoError(t, store.APITokenInsert(ctx, &persistence.APIToken{Name: "dash", Hash: persistence.HashToken("reader-secret"), Role: graph.RoleReader}))
		require.NoError(t, store.APITokenInsert(ctx, &persistence.APIToken{Name: "py", Hash: persistence.HashToken("worker-secret"), Role: graph.RoleWorker, Functions: &fns}))
		b := setup(t, store, func(c *server.Config) { c.Authenticate = server.StoreAuthenticator(store) })
		addTask(t, b, "f")
		addTask(t, b, "g")
		const worker, admin, reader = "Bearer worker-secret", "Bearer admin-secret", "Bearer reader-secret"
		code := func(resp gqlResponse) any {
			if len(resp.Errors) == 0 {
				return nil
			}
			return resp.Errors[0].Extensions["code"]
		}
		for _, q := range []string{
			`{ workflows(first: 1) { totalCount } }`,
			`{ remoteWorkers { name } }`,
			`mutation { startWorkflow(input: {type: "test.flow"}) { created } }`,
			`mutation { pollTasks(input: {functions: ["f"]}) { tasks { workflow { id status } } } }`,
			`mutation { pollTasks(input: {functions: ["f"]}) { tasks { id } } startWorkflow(input: {type: "test.flow"}) { created } }`,
		} {
			_, resp := postAs(t, b, worker, q)
			require.Equal(t, "FORBIDDEN", code(resp), q)
		}
		_, resp := postAs(t, b, worker, `mutation { pollTasks(input: {functions: ["f", "g"]}) { tasks { id } } }`)
		require.Equal(t, "FORBIDDEN", code(resp))
		require.Equal(t, "functions[1]", resp.Errors[0].Extensions["field"])
		_, resp = postAs(t, b, reader, `mutation { pollTasks(input: {functions: ["f"]}) { tasks { id } } }`)
		require.Equal(t, "FORBIDDEN", code(resp), "a reader serves no task")

		// The admin leases g's task: the worker may not touch it with its token.
		_, resp = postAs(t, b, admin, `mutation { pollTasks(input: {functions: ["g"]}) { tasks { token } } }`)
		require.Nil(t, code(resp))
		var adminPoll struct {
			PollTasks struct{ Tasks []struct{ Token string } }
		}
		require.NoError(t, json.Unmarshal(resp.Data, &adminPoll))
		require.Len(t, adminPoll.PollTasks.Tasks, 1)
		_, resp = postAs(t, b, worker, fmt.Sprintf(`mutation { completeTask(input: {token: %q, output: 1}) { id } }`, adminPoll.PollTasks.Tasks[0].Token))
		require.Equal(t, "FORBIDDEN", code(resp))

		_, resp = postAs(t, b, worker, `mutation { pollTasks(input: {functions: ["f"], worker: "py-1"}) { tasks { token function workflow { id } } } }`)
		require.Nil(t, code(resp), "%+v", resp.Errors)
		var p struct {
			PollTasks struct {
				Tasks []struct{ Token, Function string }
			}
		}
		require.NoError(t, json.Unmarshal(resp.Data, &p))
		require.Len(t, p.PollTasks.Tasks, 1)
		tok := p.PollTasks.Tasks[0].Token
		_, resp = postAs(t, b, worker, fmt.Sprintf(`mutation { heartbeatTask(input: {token: %q}) { deadline } }`, tok))
		require.Nil(t, code(resp))
		_, resp = postAs(t, b, worker, fmt.Sprintf(`mutation { failTask(input: {token: %q, error: {title: "no", status: 503}, retryable: true}) { status } }`, tok))
		require.Nil(t, code(resp), "%+v", resp.Errors)

		// /metrics (and any endpoint guarded by RequireToken) is not for workers either.
		metrics := httptest.NewServer(server.RequireToken(server.StoreAuthenticator(store),
			http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })))
		defer metrics.Close()
		for auth, want := range map[string]int{worker: http.StatusForbidden, reader: http.StatusOK} {
			req, err := http.NewRequest(http.MethodGet, metrics.URL, nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", auth)
			r, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			r.Body.Close()
			require.Equal(t, want, r.StatusCode, auth)
		}
	})
}
