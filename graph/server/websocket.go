package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	"github.com/cairnflow/cairn/graph/internal/request"
)

// Close codes of graphql-transport-ws that cairn uses besides gqlgen's.
const (
	// closeBadRequest: the client broke the protocol (a connection_init payload that is not an
	// object).
	closeBadRequest = 4400
	// closeForbidden: the connection's API token is missing, unknown or revoked.
	closeForbidden = 4403
)

// wsState is what cairn keeps of one websocket connection: the connection itself (to close it
// with a code of its own) and how many subscriptions it runs.
type wsState struct {
	mu      sync.Mutex
	conn    transport.WebsocketConn
	subs    request.Connection
	started string // the id of the subscription the last message read started, if it started one
}

type wsStateKey struct{}

func wsStateOf(ctx context.Context) *wsState {
	st, _ := ctx.Value(wsStateKey{}).(*wsState)
	return st
}

// closeWith closes the connection with a code; the first close wins.
func (st *wsState) closeWith(code int, reason string) {
	st.mu.Lock()
	conn := st.conn
	st.mu.Unlock()
	if conn != nil {
		_ = conn.WriteClose(code, reason)
	}
}

// websocketTransport is gqlgen's websocket transport with cairn's guards: a connection_init whose
// payload is not an object is closed with 4400, and whatever path gqlgen takes out of a
// connection, the socket is closed when it returns (gqlgen leaves it open after such a payload,
// holding a file descriptor for good).
type websocketTransport struct {
	transport.Websocket
}

var _ graphql.Transport = websocketTransport{}

// Do serves one websocket connection.
func (t websocketTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	st := &wsState{}
	r = r.WithContext(request.WithConnection(context.WithValue(r.Context(), wsStateKey{}, st), &st.subs))
	inner := t.Implementation
	if inner == nil {
		inner = coderImplementation{}
	}
	t.Implementation = guardedImplementation{inner: inner, st: st}
	t.Websocket.Do(w, r, exec)
	st.mu.Lock()
	conn := st.conn
	st.mu.Unlock()
	if conn != nil {
		_ = conn.Close()
	}
}

// guardedImplementation accepts connections through another implementation and guards them.
type guardedImplementation struct {
	inner transport.WebsocketImplementation
	st    *wsState
}

// closeHandshakeGrace bounds how long a connection the server closes waits for the peer's close
// frame: the websocket library waits 5 s, so an init timeout of 10 s closed a silent peer after 15 s.
const closeHandshakeGrace = time.Second

// Accept accepts the connection and remembers it in the connection's state.
func (g guardedImplementation) Accept(w http.ResponseWriter, r *http.Request, options transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	hw := &hijackWatcher{ResponseWriter: w}
	conn, err := g.inner.Accept(hw, r, options)
	if err != nil {
		return nil, err
	}
	gc := &guardedConn{WebsocketConn: conn, netConn: hw.conn, st: g.st}
	g.st.mu.Lock()
	g.st.conn = gc
	g.st.mu.Unlock()
	return gc, nil
}

// guardedConn checks the first message of a connection: a connection_init with a payload that is
// neither an object nor null closes the connection with 4400.
type guardedConn struct {
	transport.WebsocketConn
	netConn     net.Conn // the hijacked connection, closed closeHandshakeGrace after a close frame
	st          *wsState
	initChecked bool // only the transport's reading goroutine touches it
	closeOnce   sync.Once
}

// WriteClose sends the close frame, and closes the network connection closeHandshakeGrace later
// whether or not the peer answered it.
func (c *guardedConn) WriteClose(code int, reason string) error {
	err := c.WebsocketConn.WriteClose(code, reason)
	if c.netConn != nil {
		c.closeOnce.Do(func() { time.AfterFunc(closeHandshakeGrace, func() { _ = c.netConn.Close() }) })
	}
	return err
}

// hijackWatcher keeps the network connection a websocket library hijacks from the response.
type hijackWatcher struct {
	http.ResponseWriter
	conn net.Conn
}

// Hijack hands the connection over, its writes batched (see batchedConn), and remembers it.
func (h *hijackWatcher) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return conn, brw, err
	}
	// The library writes through brw's writer, which net/http made over conn and left empty.
	if err := brw.Writer.Flush(); err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	bc := newBatchedConn(conn)
	brw.Writer.Reset(bc)
	h.conn = bc
	return bc, brw, nil
}

// Unwrap lets http.ResponseController reach the server's writer.
func (h *hijackWatcher) Unwrap() http.ResponseWriter { return h.ResponseWriter }

var (
	_ transport.WebsocketReadLimiter   = (*guardedConn)(nil)
	_ transport.WebsocketReadDeadliner = (*guardedConn)(nil)
)

// errBadInit ends the read of a connection already closed with 4400.
var errBadInit = transport.ErrWebsocketClosed

// NextReader returns the next message, checking the first, and notes the id of a subscription
// it starts (see responseSenders).
func (c *guardedConn) NextReader() (int, io.Reader, error) {
	kind, r, err := c.WebsocketConn.NextReader()
	if err != nil {
		return kind, r, err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return kind, nil, err
	}
	var msg struct {
		Type    string          `json:"type"`
		ID      string          `json:"id"`
		Payload json.RawMessage `json:"payload"`
	}
	decoded := json.Unmarshal(data, &msg) == nil
	if !c.initChecked {
		c.initChecked = true
		if decoded && msg.Type == "connection_init" {
			p := bytes.TrimSpace(msg.Payload)
			if len(p) > 0 && p[0] != '{' && string(p) != "null" {
				_ = c.WriteClose(closeBadRequest, "the connection_init payload must be an object")
				return kind, nil, errBadInit
			}
		}
	}
	started := ""
	if decoded && (msg.Type == "subscribe" || msg.Type == "start") { // graphql-transport-ws, graphql-ws
		started = msg.ID
	}
	c.st.mu.Lock()
	c.st.started = started
	c.st.mu.Unlock()
	return kind, bytes.NewReader(data), nil
}

// SetReadLimit passes the transport's read limit on.
func (c *guardedConn) SetReadLimit(limit int64) {
	if l, ok := c.WebsocketConn.(transport.WebsocketReadLimiter); ok {
		l.SetReadLimit(limit)
	}
}

// SetReadDeadline passes the transport's read deadline (missing pongs) on.
func (c *guardedConn) SetReadDeadline(t time.Time) error {
	if d, ok := c.WebsocketConn.(transport.WebsocketReadDeadliner); ok {
		return d.SetReadDeadline(t)
	}
	return nil
}
