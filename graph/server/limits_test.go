package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

func TestBadDocumentsGetCodedErrorsNever500(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store, func(c *server.Config) {
			c.MaxDepth = 6
			c.ComplexityLimit = 3000
			c.MaxBodyBytes = 64 << 10
			c.ParserTokenLimit = 500
		})
		id := b.start(t, nil)

		status, resp := b.postRaw(t, `{"query": "{ workflows { nodes { id } } `) // broken JSON
		require.Equal(t, http.StatusBadRequest, status)
		require.NotEmpty(t, resp.Errors)

		b.fails(t, "GRAPHQL_PARSE_FAILED", `{ workflows { nodes { id }`, nil)
		e := b.fails(t, "GRAPHQL_VALIDATION_FAILED", `{ workflows { nodes { id color } } }`, nil)
		require.Contains(t, e.Message, "color")
		b.fails(t, "GRAPHQL_VALIDATION_FAILED", `query($n: Int) { workflows(first: $n) { totalCount } }`, map[string]any{"n": "ten"})
		e = b.fails(t, "GRAPHQL_VALIDATION_FAILED", `query($f: WorkflowFilter) { workflows(filter: $f) { totalCount } }`,
			map[string]any{"f": map[string]any{"statuses": []string{"FINISHED", "SLEEPING"}}})
		require.Equal(t, "statuses[1]", e.Extensions["field"], "a variable's refused value names its field")
		b.fails(t, "GRAPHQL_VALIDATION_FAILED", `mutation { pauseWorkflow(input: {}) { workflow { id } } }`, nil)

		e = b.fails(t, "INVALID_INPUT", `{ workflows(first: 100000) { totalCount } }`, nil)
		require.Equal(t, "first", e.Extensions["field"])
		require.Equal(t, []any{"workflows"}, e.Path)
		b.fails(t, "INVALID_INPUT", `{ workflows(first: 1, last: 1) { totalCount } }`, nil)
		b.fails(t, "INVALID_INPUT", `{ workflows(after: "bogus") { totalCount } }`, nil)
		b.fails(t, "INVALID_INPUT", `{ workflow(id: "bogus") { id } }`, nil)
		b.fails(t, "INVALID_INPUT", `{ workflows(filter: {ids: ["bogus"]}) { totalCount } }`, nil)
		b.fails(t, "INVALID_INPUT", `query($id: ID!) { workflow(id: $id) { variablesAt(actionId: $id) } }`, map[string]any{"id": id})

		b.fails(t, "DEPTH_LIMIT_EXCEEDED", `{ workflows { nodes { parent { parent { parent { parent { parent { id } } } } } } } }`, nil)
		b.fails(t, "COMPLEXITY_LIMIT_EXCEEDED", `{ workflows(first: 500) { nodes { children(first: 500) { nodes { id } } } } }`, nil)
		_, resp = b.post(t, "{ "+strings.Repeat("workflows { totalCount } ", 200)+"}", nil)
		require.NotEmpty(t, resp.Errors, "the parser's token limit")

		big := `{"query": "{ workflows { totalCount } }", "variables": {"x": "` + strings.Repeat("a", 100<<10) + `"}}`
		r, err := http.Post(b.srv.URL+"/graphql", "application/json", strings.NewReader(big))
		require.NoError(t, err)
		r.Body.Close()
		require.Equal(t, http.StatusRequestEntityTooLarge, r.StatusCode)

		// Queries work by GET too; GraphiQL is at the root.
		r, err = http.Get(b.srv.URL + "/graphql?query=" + "%7B%20workflows%20%7B%20totalCount%20%7D%20%7D")
		require.NoError(t, err)
		body, _ := io.ReadAll(r.Body)
		r.Body.Close()
		require.Equal(t, http.StatusOK, r.StatusCode)
		require.JSONEq(t, `{"data": {"workflows": {"totalCount": 1}}}`, string(body))
		r, err = http.Get(b.srv.URL + "/")
		require.NoError(t, err)
		body, _ = io.ReadAll(r.Body)
		r.Body.Close()
		require.Contains(t, string(body), "graphiql")
	})
}

func TestIntrospectionToggle(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		on := setup(t, store)
		var schema struct {
			Schema struct{ QueryType struct{ Name string } } `json:"__schema"`
		}
		on.must(t, `{ __schema { queryType { name } } }`, &schema, nil)
		require.Equal(t, "Query", schema.Schema.QueryType.Name)
		off := setup(t, store, func(c *server.Config) { c.Introspection = false })
		e := off.fails(t, "FORBIDDEN", `{ __schema { queryType { name } } }`, nil)
		require.Contains(t, e.Message, "introspection")
		var typename struct {
			Typename string `json:"__typename"`
		}
		off.must(t, `{ __typename }`, &typename, nil)
		require.Equal(t, "Query", typename.Typename)
	})
}

func TestInternalErrorsAreMasked(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		_, err := store.DB().ExecContext(t.Context(), "DROP TABLE change_events")
		require.NoError(t, err)
		_, err = store.DB().ExecContext(t.Context(), "DROP TABLE workflow_definitions")
		require.NoError(t, err)
		e := b.fails(t, "INTERNAL", `{ workflowDefinitions { type } }`, nil)
		require.Equal(t, "internal error", e.Message)
		require.NotContains(t, e.Message, "workflow_definitions")
	})
}

// A connection's items cost their cost times the page size, while its totalCount is paid once at
// its own price: the README's example costs exactly 2301.
func TestCostOfConnectionsAndScans(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		const query = `{ workflows(first: 100) { totalCount nodes { id status } } }`
		fits := setup(t, store, func(c *server.Config) { c.ComplexityLimit = 2301 })
		var out struct {
			Workflows struct {
				TotalCount int
				Nodes      []struct{ ID, Status string }
			}
		}
		fits.must(t, query, &out, nil)
		over := setup(t, store, func(c *server.Config) { c.ComplexityLimit = 2300 })
		e := over.fails(t, "COMPLEXITY_LIMIT_EXCEEDED", query, nil)
		require.Equal(t, "the operation costs 2301; at most 2300 is allowed", e.Message)
		e = over.fails(t, "COMPLEXITY_LIMIT_EXCEEDED", `{ a: workflowStats { total } }`, nil)
		require.Contains(t, e.Message, "costs 5000")
	})
}
