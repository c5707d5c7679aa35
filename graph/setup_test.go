package graph_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/client"
	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// testFlow is a small definition the tests drive through operations (no worker runs its steps
// unless a test starts one).
var testFlow = workflow.Definition{
	Type:        "test.flow",
	Description: "a flow for the API tests",
	States: []workflow.State{
		{Name: "start", Kind: workflow.Start, Next: []string{"work", "review"}, Handler: func(workflow.StepContext) (workflow.Next, error) {
			return workflow.MoveTo("work"), nil
		}},
		{Name: "work", Kind: workflow.Normal, Next: []string{"done", "failed"}, Handler: func(workflow.StepContext) (workflow.Next, error) {
			return workflow.Finish(), nil
		}},
		{Name: "approval", Kind: workflow.Wait, Next: []string{"done"}, WaitFor: &workflow.WaitFor{Signal: "approve"}},
		{Name: "review", Kind: workflow.Manual, Next: []string{"work", "done"}},
		{Name: "done", Kind: workflow.End},
		{Name: "failed", Kind: workflow.ErrorKind},
	},
}

// testHosts are the host names the tests' servers answer to besides IP addresses: gqlgen's test
// client and httptest.NewRequest send Host: example.com.
var testHosts = []string{"example.com"}

// bundle is what a test talks to: a real engine on a real database behind the real HTTP handler.
type bundle struct {
	store   *persistence.Store
	engine  *engine.Engine
	handler http.Handler
	srv     *httptest.Server
	c       *client.Client
}

func setup(t testing.TB, store *persistence.Store, configure ...func(*server.Config)) *bundle {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	engine := engine.New(store, engine.Options{Logger: log})
	_, err := engine.Register(context.Background(), testFlow)
	require.NoError(t, err)
	cfg := server.Config{Engine: engine, Logger: log, Introspection: true, AllowedHosts: testHosts}
	for _, f := range configure {
		f(&cfg)
	}
	h := server.New(cfg)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &bundle{store: store, engine: engine, handler: h, srv: srv, c: client.New(h, client.Path("/graphql"))}
}

// gqlError is one error of a response.
type gqlError struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path"`
	Extensions map[string]any `json:"extensions"`
}

// gqlResponse is a raw response.
type gqlResponse struct {
	Data   json.RawMessage `json:"data"`
	Errors []gqlError      `json:"errors"`
}

// post sends a query over real HTTP and returns the status and the decoded response.
func (b *bundle) post(t *testing.T, query string, vars map[string]any) (int, gqlResponse) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	require.NoError(t, err)
	return b.postRaw(t, string(body))
}

func (b *bundle) postRaw(t *testing.T, body string) (int, gqlResponse) {
	t.Helper()
	resp, err := http.Post(b.srv.URL+"/graphql", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out gqlResponse
	require.NoError(t, json.Unmarshal(raw, &out), string(raw))
	require.Less(t, resp.StatusCode, 500, string(raw))
	return resp.StatusCode, out
}

// postAs sends a query with an Authorization header ("" for none) and returns status and response.
func postAs(t *testing.T, b *bundle, authorization, query string) (int, gqlResponse) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": query})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, b.srv.URL+"/graphql", strings.NewReader(string(body)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out gqlResponse
	require.NoError(t, json.Unmarshal(raw, &out), string(raw))
	return resp.StatusCode, out
}

// must runs a query through gqlgen's client and decodes its data into out.
func (b *bundle) must(t *testing.T, query string, out any, vars map[string]any) {
	t.Helper()
	opts := make([]client.Option, 0, len(vars))
	for k, v := range vars {
		opts = append(opts, client.Var(k, v))
	}
	require.NoError(t, b.c.Post(query, out, opts...))
}

// fails runs a query that must fail with one error of a code and returns the error.
func (b *bundle) fails(t *testing.T, code, query string, vars map[string]any) gqlError {
	t.Helper()
	_, resp := b.post(t, query, vars)
	require.NotEmpty(t, resp.Errors, "expected a %s error", code)
	require.Equal(t, code, resp.Errors[0].Extensions["code"], "%+v", resp.Errors)
	for _, e := range resp.Errors {
		low := strings.ToLower(e.Message)
		require.NotContains(t, low, "sql", "no SQL leaks to clients")
		require.NotContains(t, low, "select ", "no SQL leaks to clients")
	}
	return resp.Errors[0]
}

// start starts a test.flow workflow through the API and returns its ID.
func (b *bundle) start(t *testing.T, input map[string]any) string {
	t.Helper()
	var resp struct {
		StartWorkflow struct {
			Workflow struct{ ID string }
			Created  bool
		}
	}
	in := map[string]any{"type": "test.flow"}
	for k, v := range input {
		in[k] = v
	}
	b.must(t, `mutation($in: StartWorkflowInput!) { startWorkflow(input: $in) { workflow { id } created } }`, &resp, map[string]any{"in": in})
	require.NotEmpty(t, resp.StartWorkflow.Workflow.ID)
	return resp.StartWorkflow.Workflow.ID
}

// rowID returns the row ID behind a workflow's opaque ID, read back through the API's filter: the
// tests never parse IDs, so they ask the Store for the newest workflow instead where needed.
func newestWorkflow(t *testing.T, store *persistence.Store) *persistence.Workflow {
	t.Helper()
	wfs, _, err := store.WorkflowList(context.Background(), persistence.WorkflowListParams{Limit: 1, Desc: true})
	require.NoError(t, err)
	require.Len(t, wfs, 1)
	return wfs[0]
}
