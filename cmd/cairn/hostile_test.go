package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence/dbtest"
)

// hostileResponse is a response to a hostile request: its status, its GraphQL errors and its
// raw body.
type hostileResponse struct {
	status int
	errors []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	}
	raw string
}

// code returns the code of the first error ("" when there is none).
func (r hostileResponse) code() string {
	if len(r.errors) == 0 {
		return ""
	}
	code, _ := r.errors[0].Extensions["code"].(string)
	return code
}

// send sends a request to the node's /graphql and decodes the response.
func (n *node) send(t *testing.T, method, contentType string, body io.Reader, header ...string) hostileResponse {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+n.addr+"/graphql", body)
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	out := hostileResponse{status: resp.StatusCode, raw: string(raw)}
	var envelope struct {
		Errors json.RawMessage `json:"errors"`
	}
	if json.Unmarshal(raw, &envelope) == nil && len(envelope.Errors) > 0 {
		require.NoError(t, json.Unmarshal(envelope.Errors, &out.errors), string(raw))
	}
	return out
}

// query posts a GraphQL document and returns the response.
func (n *node) query(t *testing.T, query string) hostileResponse {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": query})
	require.NoError(t, err)
	return n.send(t, http.MethodPost, "application/json", bytes.NewReader(body))
}

// requireRefused checks a refusal: the status, the code, and that it came at once.
func requireRefused(t *testing.T, r hostileResponse, status int, code string) {
	t.Helper()
	require.Equal(t, status, r.status, r.raw)
	require.Equal(t, code, r.code(), r.raw)
}

// timed runs f and fails when it takes longer than bound (a generous bound for something that
// must take well under a second).
func timed(t *testing.T, bound time.Duration, what string, f func()) {
	t.Helper()
	start := time.Now()
	f()
	require.Less(t, time.Since(start), bound, what)
}

// fragmentBomb is 24 fragments, each spreading the one before twice: 2^24 fields once expanded,
// in about 1 KB.
func fragmentBomb() string {
	var b strings.Builder
	b.WriteString("query { workflowDefinitions { ...F24 } }\nfragment F0 on WorkflowDefinition { type }\n")
	for i := 1; i <= 24; i++ {
		fmt.Fprintf(&b, "fragment F%d on WorkflowDefinition { ...F%d ...F%d }\n", i, i-1, i-1)
	}
	return b.String()
}

// Hostile documents are refused with a coded client error before they cost anything: a fragment
// bomb, thousands of copies of one field, thousands of aliases of a field that scans every
// workflow, two operations without operationName.
// documentRefused is the status of a refused document (a GraphQL request error) for a client
// that accepts application/json: 200 with the errors, as GraphQL-over-HTTP asks; a client that
// asks for application/graphql-response+json gets 400.
const documentRefused = http.StatusOK

func TestHostileDocumentsAreRefusedAtOnce(t *testing.T) {
	t.Parallel()
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			n := startNode(t, nil, "--database", dbtest.URL(t, kind), "--demo", "--addr", "127.0.0.1:0", "--log-format", "json", "--no-workers")
			// Generous bounds: each must take well under a second, and took 7 s to minutes before.
			timed(t, 5*time.Second, "fragment bomb", func() {
				requireRefused(t, n.query(t, fragmentBomb()), documentRefused, "FIELD_LIMIT_EXCEEDED")
			})
			timed(t, 5*time.Second, "3,000 copies of one field", func() {
				requireRefused(t, n.query(t, "{ "+strings.Repeat("executors { id } ", 3000)+"}"), documentRefused, "FIELD_LIMIT_EXCEEDED")
			})
			timed(t, 5*time.Second, "14,000 copies of one field", func() {
				requireRefused(t, n.query(t, "{ "+strings.Repeat("__typename ", 14000)+"}"), documentRefused, "FIELD_LIMIT_EXCEEDED")
			})
			var aliases strings.Builder
			for i := range 2400 {
				fmt.Fprintf(&aliases, "s%d: workflowStats { total } ", i)
			}
			timed(t, 5*time.Second, "2,400 aliases of workflowStats", func() {
				requireRefused(t, n.query(t, "{ "+aliases.String()+"}"), documentRefused, "ALIAS_LIMIT_EXCEEDED")
			})
			r := n.query(t, "query A { executors { id } } query B { executors { host } }")
			requireRefused(t, r, documentRefused, "GRAPHQL_VALIDATION_FAILED")
			require.Equal(t, "the document holds 2 operations; operationName must name one", r.errors[0].Message)
			require.Equal(t, "operationName", r.errors[0].Extensions["field"])
			body := `{"query":"query A { executors { id } } query B { executors { host } }"}`
			r = n.send(t, http.MethodPost, "application/json", strings.NewReader(body), "Accept", "application/graphql-response+json")
			requireRefused(t, r, http.StatusBadRequest, "GRAPHQL_VALIDATION_FAILED")
			require.NotContains(t, r.raw, `"data"`, "a request that never ran has no data")

			// A page of workflows with their count is an ordinary query.
			r = n.query(t, "{ workflows(first: 100) { totalCount nodes { id status } } workflowStats { total } }")
			require.Equal(t, http.StatusOK, r.status, r.raw)
			require.Empty(t, r.errors, r.raw)
			require.Nil(t, n.findLog("internal error in GraphQL request"))
		})
	}
}

// Fields that scan every workflow cost what they cost: even with the field and alias limits
// raised, 2,400 workflowStats are refused by the complexity limit, on both databases.
func TestWorkflowStatsCostsWhatItScans(t *testing.T) {
	t.Parallel()
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			n := startNode(t, nil, "--database", dbtest.URL(t, kind), "--demo", "--addr", "127.0.0.1:0", "--log-format", "json",
				"--no-workers", "--max-aliases", "10000", "--max-fields", "10000")
			var aliases strings.Builder
			for i := range 2400 {
				fmt.Fprintf(&aliases, "s%d: workflowStats { total } ", i)
			}
			timed(t, 5*time.Second, "2,400 aliases of workflowStats", func() {
				requireRefused(t, n.query(t, "{ "+aliases.String()+"}"), documentRefused, "COMPLEXITY_LIMIT_EXCEEDED")
			})
			timed(t, 5*time.Second, "100 totalCounts", func() {
				requireRefused(t, n.query(t, "{ "+aliasesOf("workflows { totalCount }", 100)+"}"),
					documentRefused, "COMPLEXITY_LIMIT_EXCEEDED")
			})
			r := n.query(t, "{ "+aliasesOf("workflowStats { total }", 10)+"}")
			require.Equal(t, http.StatusOK, r.status, r.raw)
			require.Empty(t, r.errors, r.raw)
		})
	}
}

// aliasesOf repeats a field under n aliases.
func aliasesOf(field string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "a%d: %s ", i, field)
	}
	return b.String()
}

// Requests that are not GraphQL requests are the client's error: 4xx with a code, logged at most
// as one short line below ERROR, never with the body.
func TestBadRequestsAreClientErrors(t *testing.T) {
	t.Parallel()
	n := startNode(t, nil, "--database", dbtest.URL(t, "sqlite"), "--demo", "--addr", "127.0.0.1:0", "--log-format", "json",
		"--no-workers", "--log-level", "debug")
	const json = "application/json"
	deep := strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000)
	bodies := map[string]string{
		"malformed JSON":          `{"query": "{ executors { id } }"`,
		"empty body":              ``,
		"batched":                 `[{"query": "{ executors { id } }"}]`,
		"variables not an object": `{"query": "{ executors { id } }", "variables": [1]}`,
		"variables a string":      `{"query": "{ executors { id } }", "variables": "x"}`,
		"operationName a number":  `{"query": "{ executors { id } }", "operationName": 5}`,
		"query a number":          `{"query": 5}`,
		"a string":                `"x"`,
		"nested 10,000 deep":      `{"query": "{ executors { id } }", "variables": {"v": ` + deep + `}}`,
	}
	for name, body := range bodies {
		r := n.send(t, http.MethodPost, json, strings.NewReader(body))
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", name, r.raw)
		require.Equal(t, "BAD_REQUEST", r.code(), "%s: %s", name, r.raw)
	}

	// A body over the limit is 413 whether its length is declared or it is chunked.
	huge := `{"query": "{ executors { id } }", "variables": {"x": "` + strings.Repeat("a", 2<<20) + `"}}`
	requireRefused(t, n.send(t, http.MethodPost, json, strings.NewReader(huge)), http.StatusRequestEntityTooLarge, "REQUEST_TOO_LARGE")
	chunked := io.MultiReader(strings.NewReader(huge)) // no length: sent chunked
	requireRefused(t, n.send(t, http.MethodPost, json, chunked), http.StatusRequestEntityTooLarge, "REQUEST_TOO_LARGE")

	// Transport errors carry codes too.
	requireRefused(t, n.send(t, http.MethodPost, "", strings.NewReader(`{"query": "{ executors { id } }"}`)), http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE")
	requireRefused(t, n.send(t, http.MethodPost, "text/plain", strings.NewReader(`{"query": "{ executors { id } }"}`)), http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE")
	requireRefused(t, n.send(t, http.MethodPut, json, strings.NewReader(`{"query": "{ executors { id } }"}`)), http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
	requireRefused(t, n.send(t, http.MethodDelete, "", nil), http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
	req, err := http.NewRequest(http.MethodGet, "http://"+n.addr+"/graphql?query="+
		strings.ReplaceAll(`mutation { startWorkflow(input: {type: "demo.order"}) { created } }`, " ", "%20"), nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, string(raw))
	require.Contains(t, string(raw), `"code":"METHOD_NOT_ALLOWED"`)
	require.Equal(t, "POST", resp.Header.Get("Allow"))
	r := n.send(t, http.MethodGet, "", nil) // no query
	require.Less(t, r.status, 500, r.raw)
	require.NotEmpty(t, r.code(), r.raw)
	req, err = http.NewRequest(http.MethodGet, "http://"+n.addr+"/graphql?query=%7B%20executors%20%7B%20id%20%7D%20%7D&variables=%5B1", nil)
	require.NoError(t, err)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(raw))
	require.Contains(t, string(raw), `"code":"BAD_REQUEST"`)

	// Nothing reached the log at ERROR, and no body did at all.
	out := n.output()
	require.NotContains(t, out, `"level":"ERROR"`)
	require.NotContains(t, out, "aaaaaaaaaa")
	require.NotContains(t, out, `{"a":{"a":`)
	require.Less(t, len(out), 64<<10, "the log grew by the bodies")
	require.Zero(t, n.stop(t))
}

// openFDs counts a process's open file descriptors.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	require.NoError(t, err)
	return len(entries)
}

// dialWS opens a graphql-transport-ws websocket to the node.
func dialWS(t *testing.T, n *node, header http.Header) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws://"+n.addr+"/graphql", &websocket.DialOptions{
		Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: header})
	require.NoError(t, err)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

// wsWrite sends a message.
func wsWrite(t *testing.T, c *websocket.Conn, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, c.Write(ctx, websocket.MessageText, []byte(msg)))
}

// wsMessage is a graphql-transport-ws message from the server.
type wsMessage struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Payload json.RawMessage `json:"payload"`
}

// wsRead reads the next message other than a ping, or returns the error that ended the
// connection.
func wsRead(t *testing.T, c *websocket.Conn, timeout time.Duration) (wsMessage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return wsMessage{}, err
		}
		var m wsMessage
		require.NoError(t, json.Unmarshal(data, &m), string(data))
		if m.Type == "ping" {
			continue
		}
		return m, nil
	}
}

// wsClosedWith reads until the server closes the connection and returns the close status.
func wsClosedWith(t *testing.T, c *websocket.Conn, timeout time.Duration) websocket.StatusCode {
	t.Helper()
	for {
		_, err := wsRead(t, c, timeout)
		if err != nil {
			return websocket.CloseStatus(err)
		}
	}
}

// A connection_init whose payload is not an object is closed with 4400 and leaves no file
// descriptor behind; a socket that never sends connection_init is closed at the init timeout.
func TestWebsocketBadInitIsClosedAndFreed(t *testing.T) {
	t.Parallel()
	n := startNode(t, nil, "--database", dbtest.URL(t, "sqlite"), "--addr", "127.0.0.1:0", "--log-format", "json",
		"--no-workers", "--websocket-init-timeout", "1s")
	pid := n.cmd.Process.Pid
	before := openFDs(t, pid)
	for i := range 60 {
		payload := []string{"5", `"x"`, "[]", "true"}[i%4]
		c := dialWS(t, n, nil)
		wsWrite(t, c, `{"type": "connection_init", "payload": `+payload+`}`)
		require.Equal(t, websocket.StatusCode(4400), wsClosedWith(t, c, 10*time.Second), "payload %s", payload)
		_ = c.CloseNow()
	}
	waitFor(t, 30*time.Second, "the server to free the sockets' file descriptors", func() bool {
		return openFDs(t, pid) <= before+2
	})

	// A socket that never inits is closed at the init timeout.
	c := dialWS(t, n, nil)
	timed(t, 10*time.Second, "init timeout", func() {
		_, err := wsRead(t, c, 20*time.Second)
		require.Error(t, err)
	})

	// An object payload still works.
	c = dialWS(t, n, nil)
	wsWrite(t, c, `{"type": "connection_init", "payload": {}}`)
	m, err := wsRead(t, c, 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, "connection_ack", m.Type)
	_ = c.Close(websocket.StatusNormalClosure, "")
	require.Zero(t, n.stop(t))
}

// wsSubscribe starts a workflowEvents subscription with an id.
func wsSubscribe(t *testing.T, c *websocket.Conn, id string) {
	t.Helper()
	wsWrite(t, c, `{"type": "subscribe", "id": "`+id+`", "payload": {"query": "subscription { workflowEvents { type } }"}}`)
}

// wsInit sends connection_init with a payload and expects connection_ack.
func wsInit(t *testing.T, c *websocket.Conn, payload string) {
	t.Helper()
	wsWrite(t, c, `{"type": "connection_init", "payload": `+payload+`}`)
	m, err := wsRead(t, c, 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, "connection_ack", m.Type, string(m.Payload))
}

// Subscriptions are limited per connection and per node, with a coded error; a finished one frees
// its slot.
func TestSubscriptionLimits(t *testing.T) {
	t.Parallel()
	n := startNode(t, nil, "--database", dbtest.URL(t, "sqlite"), "--demo", "--addr", "127.0.0.1:0", "--log-format", "json",
		"--no-workers", "--max-subscriptions-per-connection", "3", "--max-subscriptions", "5")
	var started struct {
		StartWorkflow struct{ Workflow struct{ ID string } }
	}
	n.graphql(t, `mutation { startWorkflow(input: {type: "demo.order"}) { workflow { id } } }`, nil, &started)
	// subscribe starts a workflowUpdated subscription, which answers at once: the workflow, or an
	// error.
	subscribe := func(c *websocket.Conn, id string) string {
		t.Helper()
		wsWrite(t, c, `{"type": "subscribe", "id": "`+id+`", "payload": {"query": "subscription($id: ID!) { workflowUpdated(id: $id) { status } }", "variables": {"id": "`+started.StartWorkflow.Workflow.ID+`"}}}`)
		for {
			m, err := wsRead(t, c, 10*time.Second)
			require.NoError(t, err)
			if m.Type == "complete" && m.ID != id {
				continue // the end of an earlier, refused subscription
			}
			require.Equal(t, id, m.ID, "%s %s", m.Type, m.Payload)
			return string(m.Payload)
		}
	}
	a := dialWS(t, n, nil)
	wsInit(t, a, "{}")
	for i := range 3 {
		require.Contains(t, subscribe(a, fmt.Sprint("a", i)), `"status"`)
	}
	got := subscribe(a, "a3")
	require.Contains(t, got, `"code":"SUBSCRIPTION_LIMIT_EXCEEDED"`)
	require.Contains(t, got, "this connection already has 3 subscriptions")
	b := dialWS(t, n, nil)
	wsInit(t, b, "{}")
	require.Contains(t, subscribe(b, "b0"), `"status"`)
	require.Contains(t, subscribe(b, "b1"), `"status"`)
	got = subscribe(b, "b2")
	require.Contains(t, got, `"code":"SUBSCRIPTION_LIMIT_EXCEEDED"`)
	require.Contains(t, got, "this node already serves 5 subscriptions")

	// Ending one frees its slot; so does closing a connection.
	wsWrite(t, a, `{"type": "complete", "id": "a0"}`)
	waitFor(t, 10*time.Second, "a freed slot", func() bool {
		return strings.Contains(subscribe(b, fmt.Sprint("b-", time.Now().UnixNano())), `"status"`)
	})
	_ = a.CloseNow()
	c := dialWS(t, n, nil)
	wsInit(t, c, "{}")
	waitFor(t, 10*time.Second, "the closed connection's slots", func() bool {
		return strings.Contains(subscribe(c, fmt.Sprint("c-", time.Now().UnixNano())), `"status"`)
	})
	_ = b.Close(websocket.StatusNormalClosure, "")
	_ = c.Close(websocket.StatusNormalClosure, "")
	require.Zero(t, n.stop(t))
}

// createToken makes an admin token with cairn token create.
func createToken(t *testing.T, url, name string) string {
	t.Helper()
	r := runCairn(t, "", nil, "token", "create", "--database", url, "--name", name)
	require.Zero(t, r.code, r.stderr)
	return strings.TrimSpace(r.stdout)
}

// A revoked token stops working on open websockets and SSE streams within seconds: the socket is
// closed with 4403. A bad token at connection_init is closed with 4403 too.
func TestRevokedTokenClosesOpenStreams(t *testing.T) {
	t.Parallel()
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			url := dbtest.URL(t, kind)
			require.Zero(t, runCairn(t, "", nil, "migrate", "up", "--database", url).code)
			token := createToken(t, url, "ops")
			n := startNode(t, nil, "--database", url, "--addr", "127.0.0.1:0", "--log-format", "json", "--no-workers",
				"--auth", "--token-recheck-interval", "1s", "--websocket-init-timeout", "2s")

			bad := dialWS(t, n, nil)
			wsWrite(t, bad, `{"type": "connection_init", "payload": {"Authorization": "Bearer cairn_bogus"}}`)
			require.Equal(t, websocket.StatusCode(4403), wsClosedWith(t, bad, 10*time.Second))

			// Without connection_init, even under --auth, the socket is closed at the init timeout.
			silent := dialWS(t, n, nil)
			_, err := wsRead(t, silent, 20*time.Second)
			require.Error(t, err)

			ws := dialWS(t, n, nil)
			wsInit(t, ws, `{"Authorization": "Bearer `+token+`"}`)
			wsSubscribe(t, ws, "1")
			headerWS := dialWS(t, n, http.Header{"Authorization": {"Bearer " + token}})
			wsInit(t, headerWS, "{}")

			// An SSE stream with the token.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+n.addr+"/graphql",
				strings.NewReader(`{"query": "subscription { workflowEvents { type } }"}`))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			sseEnded := make(chan struct{})
			go func() {
				_, _ = io.Copy(io.Discard, resp.Body)
				close(sseEnded)
			}()

			require.Zero(t, runCairn(t, "", nil, "token", "revoke", "--database", url, "--name", "ops").code)
			timed(t, 15*time.Second, "revocation reaching open connections", func() {
				require.Equal(t, websocket.StatusCode(4403), wsClosedWith(t, ws, 15*time.Second))
				require.Equal(t, websocket.StatusCode(4403), wsClosedWith(t, headerWS, 15*time.Second))
				select {
				case <-sseEnded:
				case <-time.After(15 * time.Second):
					t.Fatal("the SSE stream outlived its revoked token")
				}
			})
			require.Zero(t, n.stop(t))
		})
	}
}

// The server cuts connections that trickle a request or idle, and keeps websocket and SSE
// streams open past those timeouts.
func TestReadAndIdleTimeouts(t *testing.T) {
	t.Parallel()
	n := startNode(t, nil, "--database", dbtest.URL(t, "sqlite"), "--demo", "--addr", "127.0.0.1:0", "--log-format", "json",
		"--read-timeout", "1s", "--idle-timeout", "1s", "--read-header-timeout", "1s")

	// A body trickled a byte at a time is cut.
	conn, err := net.Dial("tcp", n.addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
	require.NoError(t, err)
	cut := make(chan struct{})
	go func() {
		defer close(cut)
		for range 100 {
			if _, err := conn.Write([]byte(" ")); err != nil {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	select {
	case <-cut:
	case <-time.After(15 * time.Second):
		t.Fatal("a trickled body kept its connection open")
	}

	// An idle keep-alive connection is closed.
	idle, err := net.Dial("tcp", n.addr)
	require.NoError(t, err)
	defer idle.Close()
	_, err = fmt.Fprintf(idle, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	require.NoError(t, idle.SetReadDeadline(time.Now().Add(15*time.Second)))
	_, err = io.ReadAll(idle) // the response, then EOF when the server closes the idle connection
	require.NoError(t, err, "the server kept an idle connection open")

	// Streams outlive the read timeout: a websocket subscription and an SSE one get an event
	// that happens three seconds after they started.
	ws := dialWS(t, n, nil)
	wsInit(t, ws, "{}")
	wsSubscribe(t, ws, "1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+n.addr+"/graphql",
		strings.NewReader(`{"query": "subscription { workflowEvents { type } }"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	time.Sleep(3 * time.Second)
	var started struct{ StartWorkflow struct{ Created bool } }
	n.graphql(t, `mutation { startWorkflow(input: {type: "demo.order"}) { created } }`, nil, &started)
	m, err := wsRead(t, ws, 20*time.Second)
	require.NoError(t, err)
	require.Equal(t, "next", m.Type, string(m.Payload))
	buf := make([]byte, 4096)
	var got strings.Builder
	for !strings.Contains(got.String(), "workflowEvents") {
		k, err := resp.Body.Read(buf)
		require.NoError(t, err, "the SSE stream ended: %s", got.String())
		got.Write(buf[:k])
	}
	cancel()
	_ = ws.Close(websocket.StatusNormalClosure, "")
	require.Zero(t, n.stop(t))
}

// Under --auth, /metrics takes a token like the API.
func TestMetricsNeedATokenUnderAuth(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t, "sqlite")
	require.Zero(t, runCairn(t, "", nil, "migrate", "up", "--database", url).code)
	token := createToken(t, url, "prometheus")
	n := startNode(t, nil, "--database", url, "--addr", "127.0.0.1:0", "--log-format", "json", "--auth")
	code, body := n.get(t, "/metrics")
	require.Equal(t, http.StatusUnauthorized, code)
	require.Contains(t, body, "UNAUTHENTICATED")
	req, err := http.NewRequest(http.MethodGet, "http://"+n.addr+"/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(raw), "go_goroutines")
	require.Zero(t, n.stop(t))
}
