package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence/dbtest"
)

// graphql posts a query to the node's /graphql and decodes its data into out; GraphQL errors fail
// the test.
func (n *node) graphql(t *testing.T, query string, variables map[string]any, out any) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": query, "variables": variables})
	require.NoError(t, err)
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Post("http://"+n.addr+"/graphql", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	var envelope struct {
		Data   json.RawMessage `json:"data"`
		Errors []any           `json:"errors"`
	}
	require.NoError(t, json.Unmarshal(raw, &envelope), string(raw))
	require.Empty(t, envelope.Errors, string(raw))
	require.NoError(t, json.Unmarshal(envelope.Data, out), string(raw))
}

// The README's first command, end to end: serve --demo, GraphiQL at /, a demo.order started
// through GraphQL runs on the node's workers (retrying its failed first charge) and finishes.
func TestServeDemoRunsAnOrderThroughGraphQL(t *testing.T) {
	t.Parallel()
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			n := startNode(t, nil, "--database", dbtest.URL(t, kind), "--demo", "--addr", "127.0.0.1:0", "--log-format", "json")

			code, page := n.get(t, "/")
			require.Equal(t, http.StatusOK, code)
			require.Contains(t, strings.ToLower(page), "graphiql")

			var started struct {
				StartWorkflow struct {
					Created  bool
					Workflow struct{ ID, Status string }
				}
			}
			n.graphql(t, `mutation($input: StartWorkflowInput!) { startWorkflow(input: $input) { created workflow { id status } } }`,
				map[string]any{"input": map[string]any{"type": "demo.order", "input": map[string]any{"failFirstCharge": true, "amount": 42}}},
				&started)
			require.True(t, started.StartWorkflow.Created)
			id := started.StartWorkflow.Workflow.ID

			var got struct {
				Workflow struct {
					Status, State string
					Actions       struct {
						Nodes []struct{ Type, State string }
					}
					SideEffects []struct{ Key string }
				}
			}
			deadline := time.Now().Add(time.Minute)
			for {
				n.graphql(t, `query($id: ID!) { workflow(id: $id) { status state actions(first: 50) { nodes { type state } } sideEffects { key } } }`,
					map[string]any{"id": id}, &got)
				if got.Workflow.Status == "FINISHED" {
					break
				}
				require.True(t, time.Now().Before(deadline), "workflow not finished within a minute: %+v", got.Workflow)
				time.Sleep(50 * time.Millisecond)
			}
			require.Equal(t, "done", got.Workflow.State)
			var failedCharges int
			for _, a := range got.Workflow.Actions.Nodes {
				if a.Type == "STATE_EXECUTION_FAILED" && a.State == "charge" {
					failedCharges++
				}
			}
			require.Equal(t, 1, failedCharges, "the first charge fails once and is retried: %+v", got.Workflow.Actions.Nodes)
			require.Len(t, got.Workflow.SideEffects, 1, "the charge id is recorded once, across the retry")

			// The node's metrics count the steps it ran: validate, charge twice, ship.
			code, metrics := n.get(t, "/metrics")
			require.Equal(t, http.StatusOK, code)
			require.Contains(t, metrics, `cairn_steps_completed_total{group="default"} 4`)
			require.Contains(t, metrics, `cairn_workflows_ended_total{group="default"} 1`)
			require.Contains(t, metrics, `cairn_steps_in_flight{group="default"} 0`)
			require.Contains(t, metrics, `go_sql_max_open_connections{db_name="cairn"}`)

			require.Zero(t, n.stop(t), n.output())
		})
	}
}
