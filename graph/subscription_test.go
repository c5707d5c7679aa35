package graph_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph"
	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

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

// expectError reads the error message of a subscription (an "error", or a "next" carrying errors)
// and checks its code.
func (c *wsClient) expectError(code string) {
	c.t.Helper()
	m := c.next()
	require.Contains(c.t, []string{"error", "next"}, m.Type)
	require.Contains(c.t, string(m.Payload), code)
}

func (c *wsClient) init() {
	c.t.Helper()
	c.send(wsMessage{Type: "connection_init"})
	require.Equal(c.t, "connection_ack", c.next().Type)
}

func (c *wsClient) subscribe(id, query string, vars map[string]any) {
	c.t.Helper()
	payload, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	require.NoError(c.t, err)
	c.send(wsMessage{ID: id, Type: "subscribe", Payload: payload})
}

// event is a workflowEvents message as the tests read it.
type event struct {
	Cursor     string
	Type       string
	Status     string
	State      string
	WorkflowID string
	Workflow   *struct {
		ID   string
		Type string
	}
}

const eventsQuery = `subscription($filter: WorkflowFilter, $after: String) {
	workflowEvents(filter: $filter, after: $after) { cursor type status state workflowId workflow { id type } } }`

func (c *wsClient) nextEvent() event {
	c.t.Helper()
	m := c.next()
	require.Equal(c.t, "next", m.Type, string(m.Payload))
	var resp struct {
		Data struct{ WorkflowEvents event }
	}
	require.NoError(c.t, json.Unmarshal(m.Payload, &resp))
	return resp.Data.WorkflowEvents
}

func TestWorkflowEventsOverGraphQLTransportWS(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		// Pings every 500 ms: a pong must arrive within a second, which a loaded CI machine running
		// with -race kept, where 250 ms (a pong within 500 ms) once missed.
		b := setup(t, store, func(c *server.Config) { c.PingInterval = 500 * time.Millisecond })
		ws, _, err := dialWS(t, b, "")
		require.NoError(t, err)
		require.Equal(t, "graphql-transport-ws", ws.conn.Subprotocol())
		ws.init()
		ws.send(wsMessage{Type: "ping"})
		require.Equal(t, "pong", ws.next().Type, "the server answers pings")
		time.Sleep(1600 * time.Millisecond) // several server pings, each to be answered within two intervals: still open

		id := b.start(t, map[string]any{"businessKey": "ws"})
		ws.subscribe("1", eventsQuery, map[string]any{"filter": map[string]any{"types": []string{"test.flow"}}, "after": graph.EventCursorStart()})
		ev := ws.nextEvent()
		require.Equal(t, "CREATED", ev.Type)
		require.Equal(t, id, ev.WorkflowID)
		require.Equal(t, id, ev.Workflow.ID)
		require.NotEmpty(t, ev.Cursor)

		var paused map[string]any
		b.must(t, `mutation($id: ID!) { pauseWorkflow(input: {id: $id}) { workflow { id } } }`, &paused, map[string]any{"id": id})
		ev = ws.nextEvent()
		require.Equal(t, "EXTERNAL_CHANGE", ev.Type)
		require.Equal(t, "PAUSED", ev.Status)

		// A subscription with a bad argument is an error message with a code, not a dropped socket.
		ws.subscribe("2", eventsQuery, map[string]any{"after": "garbage"})
		ws.expectError("INVALID_INPUT")

		ws.send(wsMessage{ID: "1", Type: "complete"})
		require.NoError(t, ws.conn.Close(websocket.StatusNormalClosure, "bye"))
	})
}

func TestWebsocketOriginAndInitTimeout(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store, func(c *server.Config) {
			c.AllowedOrigins = []string{"app.example.com"}
			c.InitTimeout = 100 * time.Millisecond
		})
		_, resp, err := dialWS(t, b, "https://evil.example.com")
		require.Error(t, err, "a foreign origin is refused")
		require.NotNil(t, resp)
		require.Equal(t, http.StatusForbidden, resp.StatusCode)

		ws, _, err := dialWS(t, b, "https://app.example.com")
		require.NoError(t, err, "an allowed origin connects")
		// Without connection_init the server closes the socket after InitTimeout.
		err = ws.closed()
		require.Equal(t, websocket.StatusProtocolError, websocket.CloseStatus(err), "closed for the init timeout: %v", err)
	})
}

// sseStream is a subscription over Server-Sent Events on the real HTTP server (gqlgen's client
// serves SSE from a recorder, which only returns once the stream ends).
type sseStream struct {
	t      *testing.T
	resp   *http.Response
	reader *bufio.Reader
}

func sseEvents(t *testing.T, b *bundle, ctx context.Context, vars map[string]any) *sseStream {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": eventsQuery, "variables": vars})
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.srv.URL+"/graphql", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	return &sseStream{t: t, resp: resp, reader: bufio.NewReader(resp.Body)}
}

// Next decodes the payload of the next "next" event into out (data and errors).
func (s *sseStream) Next(out any) error {
	var data []byte
	for {
		line, err := s.reader.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "data: "):
			data = append(data, line[len("data: "):]...)
		case line == "event: complete":
			return io.EOF
		case line == "" && len(data) > 0:
			return json.Unmarshal(data, out)
		}
	}
}

func (s *sseStream) Close() error { return s.resp.Body.Close() }

// nextEvent reads one workflowEvents payload.
func (s *sseStream) nextEvent() event {
	s.t.Helper()
	var resp struct {
		Data   struct{ WorkflowEvents event }
		Errors []gqlError
	}
	require.NoError(s.t, s.Next(&resp))
	require.Empty(s.t, resp.Errors)
	return resp.Data.WorkflowEvents
}

func TestWorkflowEventsOverSSEResumeByCursor(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store, func(c *server.Config) { c.PollInterval = 100 * time.Millisecond })
		filter := map[string]any{"businessKey": "sse"}
		// The first subscription starts from the beginning of the stream (a zero cursor).
		var ids []string
		for i := 0; i < 3; i++ {
			ids = append(ids, b.start(t, map[string]any{"businessKey": "sse"}))
		}
		b.start(t, map[string]any{"businessKey": "other"}) // filtered out

		ctx, cancel := context.WithCancel(context.Background())
		sse := sseEvents(t, b, ctx, map[string]any{"filter": filter, "after": zeroCursor(t, b)})
		var got []event
		for len(got) < 3 {
			got = append(got, sse.nextEvent())
		}
		for i, ev := range got {
			require.Equal(t, ids[i], ev.WorkflowID)
			require.Equal(t, "CREATED", ev.Type)
		}
		resumeAt := got[1].Cursor
		cancel()
		require.NoError(t, sse.Close())

		// While nobody listens, more happens.
		var paused map[string]any
		b.must(t, `mutation($id: ID!) { pauseWorkflow(input: {id: $id}) { workflow { id } } }`, &paused, map[string]any{"id": ids[0]})
		ids = append(ids, b.start(t, map[string]any{"businessKey": "sse"}))

		// Resuming after the second event gets the third, then the missed ones, once each.
		ctx2, cancel2 := context.WithCancel(context.Background())
		defer cancel2()
		sse = sseEvents(t, b, ctx2, map[string]any{"filter": filter, "after": resumeAt})
		defer sse.Close()
		var resumed []event
		for len(resumed) < 3 {
			resumed = append(resumed, sse.nextEvent())
		}
		require.Equal(t, got[2].Cursor, resumed[0].Cursor, "the event right after the cursor comes first")
		require.Equal(t, ids[0], resumed[1].WorkflowID)
		require.Equal(t, "EXTERNAL_CHANGE", resumed[1].Type)
		require.Equal(t, ids[3], resumed[2].WorkflowID)
		require.Equal(t, "CREATED", resumed[2].Type)

		// Nothing is sent twice: the next event is a new change.
		b.must(t, `mutation($id: ID!) { cancelWorkflow(input: {id: $id}) { workflow { id } } }`, &paused, map[string]any{"id": ids[1]})
		ev := sse.nextEvent()
		require.Equal(t, ids[1], ev.WorkflowID)
		require.Equal(t, "CANCELLED", ev.Status)
	})
}

// zeroCursor is the cursor before every event.
func zeroCursor(t *testing.T, _ *bundle) string {
	t.Helper()
	return graph.EventCursorStart()
}

func TestWorkflowUpdatedOverWebsocket(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		id := b.start(t, nil)
		ws, _, err := dialWS(t, b, "")
		require.NoError(t, err)
		ws.init()
		ws.subscribe("u", `subscription($id: ID!) { workflowUpdated(id: $id) { id status stateText } }`, map[string]any{"id": id})
		type updated struct {
			Data struct {
				WorkflowUpdated struct {
					ID, Status string
					StateText  *string
				}
			}
		}
		next := func() updated {
			t.Helper()
			select {
			case m := <-ws.in:
				require.Equal(t, "next", m.Type, string(m.Payload))
				var resp updated
				require.NoError(t, json.Unmarshal(m.Payload, &resp))
				return resp
			case <-time.After(10 * time.Second):
				t.Fatal("no update")
			case <-ws.ctx.Done():
				t.Fatal("connection closed")
			}
			return updated{}
		}
		// First the workflow as it is now, then each change.
		first := next()
		require.Equal(t, id, first.Data.WorkflowUpdated.ID)
		require.Equal(t, "CREATED", first.Data.WorkflowUpdated.Status)
		require.Nil(t, first.Data.WorkflowUpdated.StateText)
		var out map[string]any
		b.must(t, `mutation($id: ID!) { updateWorkflow(input: {id: $id, stateText: "hello"}) { workflow { id } } }`, &out, map[string]any{"id": id})
		changed := next()
		require.Equal(t, id, changed.Data.WorkflowUpdated.ID)
		require.Equal(t, "hello", *changed.Data.WorkflowUpdated.StateText)

		ws.subscribe("bad", `subscription { workflowUpdated(id: "nope") { id } }`, nil)
		ws.expectError("INVALID_INPUT")
	})
}
