package server

import (
	"bytes"
	"context"
	"encoding"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/coder/websocket"
)

// coderImplementation accepts websockets with github.com/coder/websocket for gqlgen's transport,
// like gqlgen's own CoderWebsocketImplementation, but writes each message without encoding its
// payload a second time (see encodeMessage).
type coderImplementation struct {
	options websocket.AcceptOptions
}

var _ transport.WebsocketImplementation = coderImplementation{}

// Accept upgrades the request, offering the subprotocols the transport speaks besides the
// configured ones.
func (i coderImplementation) Accept(w http.ResponseWriter, r *http.Request, options transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	for name, values := range options.ResponseHeader {
		for _, v := range values {
			w.Header().Add(name, v)
		}
	}
	opts := i.options
	opts.Subprotocols = slices.Clone(opts.Subprotocols)
	for _, p := range options.Subprotocols {
		if !slices.Contains(opts.Subprotocols, p) {
			opts.Subprotocols = append(opts.Subprotocols, p)
		}
	}
	conn, err := websocket.Accept(w, r, &opts)
	if err != nil {
		return nil, err
	}
	return &coderConn{conn: conn}, nil
}

// coderConn is one accepted websocket as gqlgen's transport uses it.
type coderConn struct {
	conn *websocket.Conn

	mu       sync.Mutex
	deadline *time.Timer   // closes the connection when the transport's read deadline passes
	closing  chan struct{} // set once WriteClose started the close handshake; closed when it ends
}

var (
	_ transport.WebsocketConn          = (*coderConn)(nil)
	_ transport.WebsocketReadLimiter   = (*coderConn)(nil)
	_ transport.WebsocketReadDeadliner = (*coderConn)(nil)
)

// NextReader reads the next message; a normal close is transport.ErrWebsocketClosed.
func (c *coderConn) NextReader() (int, io.Reader, error) {
	kind, data, err := c.conn.Read(context.Background())
	if err != nil {
		switch websocket.CloseStatus(err) {
		case websocket.StatusNormalClosure, websocket.StatusNoStatusRcvd:
			return int(kind), nil, transport.ErrWebsocketClosed
		}
		return int(kind), nil, err
	}
	return int(kind), bytes.NewReader(data), nil
}

// WriteJSON sends a message of the transport.
func (c *coderConn) WriteJSON(v any) error {
	data, err := encodeMessage(v)
	if err != nil {
		return err
	}
	return c.conn.Write(context.Background(), websocket.MessageText, data)
}

// WriteClose starts the close handshake in the background (the library waits up to 5 s for the
// peer's answer; the transport must not) and returns; a second call does nothing.
func (c *coderConn) WriteClose(code int, reason string) error {
	c.mu.Lock()
	c.stopDeadline()
	if c.closing != nil {
		c.mu.Unlock()
		return nil
	}
	done := make(chan struct{})
	c.closing = done
	c.mu.Unlock()
	go func() {
		defer close(done)
		_ = c.conn.Close(websocket.StatusCode(code), reason)
	}()
	return nil
}

// Close drops the connection, unless a close handshake is under way (it closes it when it ends).
func (c *coderConn) Close() error {
	c.mu.Lock()
	c.stopDeadline()
	closing := c.closing != nil
	c.mu.Unlock()
	if closing {
		return nil
	}
	return c.conn.CloseNow()
}

// Subprotocol is the subprotocol the client and the server agreed on.
func (c *coderConn) Subprotocol() string { return c.conn.Subprotocol() }

// SetReadLimit bounds the size of a message the client may send.
func (c *coderConn) SetReadLimit(limit int64) { c.conn.SetReadLimit(limit) }

// SetReadDeadline drops the connection when t passes (the transport's missed pongs); the zero
// time clears it.
func (c *coderConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.stopDeadline()
	now := false
	if !t.IsZero() {
		if d := time.Until(t); d > 0 {
			c.deadline = time.AfterFunc(d, func() { _ = c.conn.CloseNow() })
		} else {
			now = true
		}
	}
	c.mu.Unlock()
	if now {
		return c.conn.CloseNow()
	}
	return nil
}

// stopDeadline stops the read deadline's timer (c.mu held).
func (c *coderConn) stopDeadline() {
	if c.deadline != nil {
		c.deadline.Stop()
		c.deadline = nil
	}
}

// messagePlan is how encodeMessage writes one message type of the transport: the indexes of its
// id, type and payload fields, or ok false for a type it leaves to json.Marshal.
type messagePlan struct {
	id, typ, payload int
	ok               bool
}

// messagePlans caches a messagePlan per message type.
var messagePlans sync.Map

var (
	rawMessageType    = reflect.TypeFor[json.RawMessage]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// planOf finds the fields of a message type: the transport's messages have exactly an id (a
// string, omitted when empty), a type (a string or text) and a payload (raw JSON, omitted when
// empty), whatever their order, besides fields json.Marshal leaves out (unexported ones: gqlgen's
// messages carry a noOp flag).
func planOf(t reflect.Type) messagePlan {
	if p, ok := messagePlans.Load(t); ok {
		return p.(messagePlan)
	}
	p := messagePlan{id: -1, typ: -1, payload: -1}
	encoded := 0 // the fields json.Marshal writes
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		encoded++
		switch tag := f.Tag.Get("json"); {
		case f.Anonymous: // its fields would be promoted: not a shape of the transport's
		case tag == "id,omitempty" && f.Type.Kind() == reflect.String && !f.Type.Implements(textMarshalerType):
			p.id = i
		case tag == "type" && (f.Type.Kind() == reflect.String || f.Type.Implements(textMarshalerType)):
			p.typ = i
		case tag == "payload,omitempty" && f.Type == rawMessageType:
			p.payload = i
		}
	}
	p.ok = encoded == 3 && p.id >= 0 && p.typ >= 0 && p.payload >= 0
	messagePlans.Store(t, p)
	return p
}

// encodeMessage encodes a message of the transport: a pointer to a struct of an id, a type and a
// json.RawMessage payload. json.Marshal would check and compact the payload again, byte by byte,
// though the transport made it with json.Marshal an instant before (a response, its errors) or
// read it as valid JSON from the client (a ping's): it is put in as it is. A delivery to 10,000
// subscriptions compacted each event's payload 20,000 times instead of 10,000. Anything else goes
// to json.Marshal.
func encodeMessage(v any) ([]byte, error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return json.Marshal(v)
	}
	msg := rv.Elem()
	p := planOf(msg.Type())
	if !p.ok {
		return json.Marshal(v)
	}
	id := msg.Field(p.id).String()
	var typ []byte
	if tf := msg.Field(p.typ); tf.Type().Implements(textMarshalerType) {
		var err error
		if typ, err = tf.Interface().(encoding.TextMarshaler).MarshalText(); err != nil {
			return nil, err
		}
	} else {
		typ = []byte(tf.String())
	}
	payload := msg.Field(p.payload).Bytes()
	out := appendMessageHead(make([]byte, 0, len(id)+len(typ)+len(payload)+40), id, string(typ))
	if len(payload) > 0 {
		out = append(out, `,"payload":`...)
		out = append(out, payload...)
	}
	return append(out, '}'), nil
}

// appendMessageHead appends a message's opening up to its payload: {"id":...,"type":..., the id
// left out when empty.
func appendMessageHead(out []byte, id, typ string) []byte {
	out = append(out, '{')
	if id != "" {
		out = append(out, `"id":`...)
		out = appendJSONString(out, id)
		out = append(out, ',')
	}
	out = append(out, `"type":`...)
	return appendJSONString(out, typ)
}

// appendJSONString appends s as a JSON string: as it is when it has nothing to escape (an
// operation's id, a message type), else as json.Marshal writes it.
func appendJSONString(out []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			return append(out, b...)
		}
	}
	out = append(out, '"')
	out = append(out, s...)
	return append(out, '"')
}
