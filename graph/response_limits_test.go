package graph_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph"
	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// A response whose values pass MaxResponseBytes is one RESPONSE_TOO_LARGE error and no data; a
// smaller page of the same fields answers.
func TestResponsesStopAtTheByteLimit(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store, func(c *server.Config) { c.MaxResponseBytes = 100_000 })
		for range 5 {
			b.start(t, map[string]any{"variables": map[string]any{"blob": strings.Repeat("x", 30_000)}})
		}
		const q = `query($n: Int) { workflows(first: $n) { nodes { id variables } } }`
		status, resp := b.post(t, q, map[string]any{"n": 5})
		require.Equal(t, http.StatusOK, status)
		require.Len(t, resp.Errors, 1, "one error for the whole response: %d bytes", len(resp.Data))
		require.Equal(t, "RESPONSE_TOO_LARGE", resp.Errors[0].Extensions["code"])
		require.Contains(t, resp.Errors[0].Message, "over 100000 bytes")
		require.True(t, len(resp.Data) == 0 || string(resp.Data) == "null", "no partial data: %.100s", resp.Data)

		status, resp = b.post(t, q, map[string]any{"n": 2})
		require.Equal(t, http.StatusOK, status)
		require.Empty(t, resp.Errors)
		require.Greater(t, len(resp.Data), 60_000)

		// A mutation's changes are made whatever the size of its answer, and its error says so.
		ws := make([]map[string]any, 5)
		for i := range ws {
			ws[i] = map[string]any{"type": "test.flow", "businessKey": "big", "variables": map[string]any{"blob": strings.Repeat("y", 30_000)}}
		}
		status, resp = b.post(t, `mutation($ws: [StartWorkflowInput!]!) { startWorkflows(input: {workflows: $ws}) { results { created workflow { id variables } } } }`,
			map[string]any{"ws": ws})
		require.Equal(t, http.StatusOK, status)
		require.Len(t, resp.Errors, 1)
		require.Equal(t, "RESPONSE_TOO_LARGE", resp.Errors[0].Extensions["code"])
		require.Contains(t, resp.Errors[0].Message, "the mutation ran")
		var count struct{ Workflows struct{ TotalCount int } }
		b.must(t, `{ workflows(filter: {businessKey: "big"}) { totalCount } }`, &count, nil)
		require.Equal(t, 5, count.Workflows.TotalCount, "every workflow was started")
	})
}

// A page of workflows holding megabytes of variables each is refused without the node reading them
// all first: the list reads no input or variables, and the workflows that ask for theirs are read a
// few at a time, stopping at the response's byte budget.
func TestLargeVariablesAreReadOnlyWithinTheByteLimit(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store, func(c *server.Config) { c.MaxResponseBytes = 256 << 10 })
		blob := strings.Repeat("v", 100<<10) // a quarter of what it was (30 s on SQLite under -race), as is the budget
		for range 12 {
			b.start(t, map[string]any{"variables": map[string]any{"a": blob, "b": blob}})
		}
		counter := &statementCounter{}
		store.DB().AddQueryHook(counter) //lint:ignore SA1019 the hook must see the statements of this very DB, not of a copy

		var resp gqlResponse
		stmts := counter.count(func() {
			_, resp = b.post(t, `{ workflows(first: 12) { nodes { id variables } } }`, nil)
		})
		require.Len(t, resp.Errors, 1)
		require.Equal(t, "RESPONSE_TOO_LARGE", resp.Errors[0].Extensions["code"])
		reads := 0
		for _, s := range stmts {
			if strings.Contains(s, "variables") {
				reads++
				require.NotContains(t, s, "LIMIT", "the page itself reads no variables: %s", s)
			}
		}
		// 200 KB a workflow against a 256 KiB budget: the first few are enough to know.
		require.Equal(t, 1, reads, "statements reading variables: %q", stmts)

		// Pages that ask for no data, or for a little, answer as before.
		var page struct {
			Workflows struct {
				Nodes []struct {
					ID        string
					Variables map[string]string
					Input     map[string]any
					Output    any
				}
			}
		}
		b.must(t, `{ workflows(first: 12) { nodes { id } } }`, &page, nil)
		require.Len(t, page.Workflows.Nodes, 12)
		b.must(t, `{ workflows(first: 1) { nodes { id variables input output } } }`, &page, nil)
		require.Len(t, page.Workflows.Nodes, 1)
		require.Equal(t, blob, page.Workflows.Nodes[0].Variables["a"])
		require.NotNil(t, page.Workflows.Nodes[0].Input)
	})
}

// The live stream reads the workflows its events name without their input and variables (a node
// must not hold megabytes per event for subscribers that never read them); a subscriber that asks
// for them gets them.
func TestLiveEventsReadDataOnlyForSubscribersThatAskForIt(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		counter := &statementCounter{}
		store.DB().AddQueryHook(counter) //lint:ignore SA1019 the hook must see the statements of this very DB, not of a copy
		ws, _, err := dialWS(t, b, "")
		require.NoError(t, err)
		ws.init()

		var stmts []string
		var id string
		stmts = counter.count(func() {
			id = b.start(t, map[string]any{"variables": map[string]any{"note": "kept"}})
			ws.subscribe("1", eventsQuery, map[string]any{"filter": map[string]any{"types": []string{"test.flow"}}, "after": graph.EventCursorStart()})
			require.Equal(t, id, ws.nextEvent().WorkflowID)
		})
		for _, s := range stmts {
			if strings.Contains(s, "FROM \"workflows\"") || strings.Contains(s, "FROM `workflows`") {
				require.NotContains(t, s, "variables", "the event stream reads no variables: %s", s)
			}
		}

		ws.subscribe("2", `subscription($id: ID!) { workflowUpdated(id: $id) { id variables input } }`, map[string]any{"id": id})
		m := ws.next()
		require.Equal(t, "next", m.Type, string(m.Payload))
		var resp struct {
			Data struct {
				WorkflowUpdated struct {
					Variables map[string]string
					Input     map[string]any
				}
			}
		}
		require.NoError(t, json.Unmarshal(m.Payload, &resp), string(m.Payload))
		require.Equal(t, "kept", resp.Data.WorkflowUpdated.Variables["note"], string(m.Payload))
		require.NotNil(t, resp.Data.WorkflowUpdated.Input)
	})
}
