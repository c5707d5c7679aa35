package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/client"
	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
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

func setup(t *testing.T, store *persistence.Store, configure ...func(*server.Config)) *bundle {
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
	return callAs(t, b, authorization, query, nil)
}

// callAs sends a query with variables and an Authorization header ("" for none), and returns
// status and response.
func callAs(t *testing.T, b *bundle, authorization, query string, vars map[string]any) (int, gqlResponse) {
	t.Helper()
	req := map[string]any{"query": query}
	if vars != nil {
		req["variables"] = vars
	}
	body, err := json.Marshal(req)
	require.NoError(t, err)
	hr, err := http.NewRequest(http.MethodPost, b.srv.URL+"/graphql", bytes.NewReader(body))
	require.NoError(t, err)
	hr.Header.Set("Content-Type", "application/json")
	if authorization != "" {
		hr.Header.Set("Authorization", authorization)
	}
	resp, err := http.DefaultClient.Do(hr)
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

// wsMessage is a graphql-transport-ws message.
type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// wsClient speaks graphql-transport-ws to the test server. A goroutine reads the socket like a
// real client does, answering the server's pings at once.
type wsClient struct {
	t    *testing.T
	conn *websocket.Conn
	ctx  context.Context
	in   chan wsMessage
	err  chan error
}

func dialWS(t *testing.T, b *bundle, origin string) (*wsClient, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	h := http.Header{}
	if origin != "" {
		h.Set("Origin", origin)
	}
	conn, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.srv.URL, "http")+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: h})
	if err != nil {
		return nil, resp, err
	}
	t.Cleanup(func() { _ = conn.CloseNow() })
	c := &wsClient{t: t, conn: conn, ctx: ctx, in: make(chan wsMessage, 100), err: make(chan error, 1)}
	go c.readLoop()
	return c, resp, nil
}

func (c *wsClient) readLoop() {
	for {
		var m wsMessage
		if err := wsjson.Read(c.ctx, c.conn, &m); err != nil {
			c.err <- err
			return
		}
		if m.Type == "ping" {
			_ = wsjson.Write(c.ctx, c.conn, wsMessage{Type: "pong"})
			continue
		}
		c.in <- m
	}
}

func (c *wsClient) send(m wsMessage) {
	c.t.Helper()
	require.NoError(c.t, wsjson.Write(c.ctx, c.conn, m))
}

// next returns the next message that is not a ping.
func (c *wsClient) next() wsMessage {
	c.t.Helper()
	select {
	case m := <-c.in:
		return m
	case err := <-c.err:
		c.t.Fatalf("websocket closed: %v", err)
	case <-c.ctx.Done():
		c.t.Fatal("no websocket message in time")
	}
	return wsMessage{}
}

// closed waits for the server to close the socket and returns why.
func (c *wsClient) closed() error {
	c.t.Helper()
	select {
	case err := <-c.err:
		return err
	case <-c.ctx.Done():
		c.t.Fatal("the websocket stayed open")
	}
	return nil
}
