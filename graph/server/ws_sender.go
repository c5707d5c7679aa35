package server

import (
	"context"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/coder/websocket"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cairnflow/cairn/graph"
)

// responseSenders gives each subscription started on a websocket a sender of its responses
// (graph.ResponseSender), so that a response it shares with the other subscriptions of its shape
// leaves as the bytes made once, with only its id and message type around them, instead of being
// encoded again by gqlgen's transport for each subscription. gqlgen does not tell an operation its
// subscription's id; the transport's reading goroutine reads the message that starts a
// subscription (guardedConn.NextReader notes its id) and creates the operation's context right
// after, in the same goroutine, which is where this extension takes the id.
type responseSenders struct{}

var (
	_ graphql.HandlerExtension        = responseSenders{}
	_ graphql.OperationContextMutator = responseSenders{}
)

// ExtensionName names the extension for gqlgen.
func (responseSenders) ExtensionName() string { return "ResponseSenders" }

// Validate checks the extension's configuration.
func (responseSenders) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationContext sets the sender of a subscription started on a websocket.
func (responseSenders) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	st := wsStateOf(ctx)
	if st == nil || oc.Operation == nil || oc.Operation.Operation != ast.Subscription {
		return nil
	}
	st.mu.Lock()
	id, conn := st.started, st.conn
	st.started = ""
	st.mu.Unlock()
	gc, _ := conn.(*guardedConn)
	if id == "" || gc == nil {
		return nil
	}
	cc, _ := gc.WebsocketConn.(*coderConn)
	if cc == nil {
		return nil
	}
	typ := "data" // graphql-ws, the transport's choice when the client named no subprotocol
	if cc.Subprotocol() == "graphql-transport-ws" {
		typ = "next"
	}
	head := append(appendMessageHead(nil, id, typ), `,"payload":{"data":`...)
	graph.SetResponseSender(oc, &wsSender{conn: cc.conn, head: head})
	return nil
}

// wsSender sends the responses of one subscription of a websocket.
type wsSender struct {
	conn *websocket.Conn
	head []byte // the message up to the response's data
}

// sentBySenders counts the messages senders sent: the tests check that shared responses take
// this way (an atomic add per message, next to a write).
var sentBySenders atomic.Int64

// SendData sends the message {"id": ..., "type": ..., "payload": {"data": data}}. The message is
// built in a buffer of a pool all senders share (the library copies it out before Write returns):
// a buffer kept by each sender would hold 10,000 times a large response's size at 10,000
// subscriptions.
func (s *wsSender) SendData(data []byte) error {
	buf := messageBuffers.get()
	buf = append(append(append(buf, s.head...), data...), "}}"...)
	err := s.conn.Write(context.Background(), websocket.MessageText, buf)
	messageBuffers.put(buf)
	if err == nil {
		sentBySenders.Add(1)
	}
	return err
}

// messageBuffers holds the senders' message buffers between messages.
var messageBuffers = &bytePool{initial: 1024, max: 64 << 10}
