package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/cairnflow/cairn/graph"
	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// statementCounter counts the SQL statements a Store runs while it is on.
type statementCounter struct {
	mu    sync.Mutex
	on    bool
	stmts []string
}

func (c *statementCounter) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (c *statementCounter) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.on {
		c.stmts = append(c.stmts, e.Query)
	}
}

func (c *statementCounter) count(fn func()) []string {
	c.mu.Lock()
	c.on, c.stmts = true, nil
	c.mu.Unlock()
	fn()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = false
	return c.stmts
}

func TestPageOfWorkflowsCostsAFewStatements(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		b := setup(t, store)
		ps := make([]workflow.StartParams, 100)
		for i := range ps {
			ps[i] = workflow.StartParams{Type: "test.flow", BusinessKey: fmt.Sprintf("bk-%d", i)}
		}
		started, err := b.engine.StartMany(ctx, ps)
		require.NoError(t, err)
		exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Minute})
		require.NoError(t, err)
		claimed, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: 30,
			Now: time.Now().Add(time.Hour), StepDeadline: time.Now().Add(time.Hour), Types: []string{"test.flow"}})
		require.NoError(t, err)
		require.Len(t, claimed, 30)
		var actions []*persistence.Action
		var tasks []*persistence.TaskInstance
		for _, r := range started {
			for j := 0; j < 12; j++ {
				actions = append(actions, &persistence.Action{WorkflowID: r.Workflow.ID, Type: persistence.ActionStateExecution, State: "start"})
			}
			tasks = append(tasks, &persistence.TaskInstance{WorkflowID: r.Workflow.ID, State: "start", TaskType: "handler", Attempt: 1,
				Status: persistence.TaskSucceeded, ExecutorID: &exec.ID, Host: "h", Started: persistence.Now()})
		}
		require.NoError(t, store.ActionInsertMany(ctx, actions))
		require.NoError(t, store.TaskInstanceInsertMany(ctx, tasks))

		counter := &statementCounter{}
		store.DB().AddQueryHook(counter) //lint:ignore SA1019 the hook must see the statements of this very DB, not of a copy
		var resp struct {
			Workflows struct {
				Nodes []struct {
					ID      string
					Actions struct {
						Nodes []struct {
							ID   string
							Type string
						}
						PageInfo struct{ HasNextPage bool }
					}
					TaskInstances struct {
						Nodes []struct {
							ID       string
							Status   string
							Executor *struct{ Host string }
						}
					}
					Executor   *struct{ ID, Host string }
					Definition struct {
						Type    string
						Version int
						States  []struct{ Name string }
					}
				}
				TotalCount int
			}
		}
		query := `{ workflows(first: 100) { totalCount nodes { id
			actions(first: 10) { nodes { id type } pageInfo { hasNextPage } }
			taskInstances { nodes { id status executor { host } } }
			executor { id host }
			definition { type version states { name } } } } }`
		stmts := counter.count(func() { b.must(t, query, &resp, nil) })
		require.Len(t, resp.Workflows.Nodes, 100)
		require.Equal(t, 100, resp.Workflows.TotalCount)
		held := 0
		for _, w := range resp.Workflows.Nodes {
			require.Len(t, w.Actions.Nodes, 10)
			require.True(t, w.Actions.PageInfo.HasNextPage)
			if w.Executor != nil {
				// A claimed workflow's running attempt is derived from its row: no statement more.
				require.Len(t, w.TaskInstances.Nodes, 2)
				require.Equal(t, "RUNNING", w.TaskInstances.Nodes[1].Status)
			} else {
				require.Len(t, w.TaskInstances.Nodes, 1)
			}
			require.Equal(t, "h", w.TaskInstances.Nodes[0].Executor.Host)
			require.Equal(t, "test.flow", w.Definition.Type)
			require.Len(t, w.Definition.States, len(testFlow.States))
			if w.Executor != nil {
				held++
			}
		}
		require.Equal(t, 30, held)
		t.Logf("%d statements", len(stmts))
		// workflows, totalCount, actions, task instances, executors, definitions.
		require.LessOrEqual(t, len(stmts), 6, "statements: %q", stmts)
	})
}

// TestCompleteTaskUnderAuthReadsTheTokenOnce completes a remote task with a worker token: the
// server resolves the token into its caller once, and the resolver takes the worker's functions
// from that caller rather than reading the token again.
func TestCompleteTaskUnderAuthReadsTheTokenOnce(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := workerSetup(t, store)
		token := leaseAsWorker(t, b)

		counter := &statementCounter{}
		store.DB().AddQueryHook(counter) //lint:ignore SA1019 the hook must see the statements of this very DB, not of a copy
		var resp gqlResponse
		stmts := counter.count(func() {
			_, resp = postAs(t, b, "Bearer worker-secret", fmt.Sprintf(`mutation { completeTask(input: {token: %q, output: 1}) { status } }`, token))
		})
		require.Empty(t, resp.Errors)
		require.JSONEq(t, `{"completeTask": {"status": "SUCCEEDED"}}`, string(resp.Data))
		tokenReads := 0
		for _, s := range stmts {
			if strings.Contains(s, "api_tokens") {
				tokenReads++
			}
		}
		require.Equal(t, 1, tokenReads, "statements: %q", stmts)
	})
}

// TestCompleteTaskUnderAuthReadsNoTaskFirst completes a remote task with a worker token: whether
// the worker may serve the task's function is part of the fenced update that ends the task, so no
// statement reads the task before it.
func TestCompleteTaskUnderAuthReadsNoTaskFirst(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := workerSetup(t, store)
		for _, mutation := range []string{`completeTask(input: {token: %q, output: 1})`, `failTask(input: {token: %q, error: {type: "t", title: "no"}, retryable: false})`} {
			token := leaseAsWorker(t, b)

			counter := &statementCounter{}
			store.DB().AddQueryHook(counter) //lint:ignore SA1019 the hook must see the statements of this very DB, not of a copy
			var resp gqlResponse
			stmts := counter.count(func() {
				_, resp = postAs(t, b, "Bearer worker-secret", fmt.Sprintf(`mutation { `+mutation+` { status } }`, token))
			})
			require.Empty(t, resp.Errors)
			for _, s := range stmts {
				if !strings.Contains(s, "remote_tasks") {
					continue
				}
				require.True(t, strings.HasPrefix(strings.TrimSpace(s), "WITH v") || strings.HasPrefix(strings.TrimSpace(s), "UPDATE"),
					"the first statement on remote_tasks ends the task; statements: %q", stmts)
				break
			}
		}
	})
}

// workerSetup serves the API under auth, with a worker token "worker-secret" that may serve
// function f.
func workerSetup(t *testing.T, store *persistence.Store) *bundle {
	t.Helper()
	fns := "f"
	require.NoError(t, store.APITokenInsert(context.Background(), &persistence.APIToken{Name: "py", Hash: persistence.HashToken("worker-secret"),
		Role: graph.RoleWorker, Functions: &fns}))
	return setup(t, store, func(c *server.Config) { c.Authenticate = server.StoreAuthenticator(store) })
}

// leaseAsWorker adds a task of function f and leases it with the worker token; it returns the
// task's token.
func leaseAsWorker(t *testing.T, b *bundle) string {
	t.Helper()
	addTask(t, b, "f")
	_, resp := postAs(t, b, "Bearer worker-secret", `mutation { pollTasks(input: {functions: ["f"]}) { tasks { token } } }`)
	require.Empty(t, resp.Errors)
	var p struct {
		PollTasks struct{ Tasks []struct{ Token string } }
	}
	require.NoError(t, json.Unmarshal(resp.Data, &p))
	require.Len(t, p.PollTasks.Tasks, 1)
	return p.PollTasks.Tasks[0].Token
}
