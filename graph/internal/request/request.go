// Package request holds what the HTTP server tells the resolvers about the request they serve:
// its timeout, the websocket connection it came on, and the event ids of an SSE stream. The
// server (graph/server) sets them; the resolvers (graph) read them.
package request

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vektah/gqlparser/v2/gqlerror"
)

// CodeTimeout is the code of a request cut by the server's request timeout.
const CodeTimeout = "REQUEST_TIMEOUT"

// errTimeout is the cause of a request context ended by the request timeout.
var errTimeout = errors.New("the request ran past the node's request timeout")

// WithTimeout bounds a plain request (a query or a mutation, not a stream) by d.
func WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, errTimeout)
}

// TimedOut reports whether a request's context ended because of its request timeout.
func TimedOut(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errTimeout)
}

// TimeoutError is what a field cut by a request timeout of d answers.
func TimeoutError(d time.Duration) *gqlerror.Error {
	err := gqlerror.Errorf("%s", fmt.Sprintf("the request ran longer than this node's request timeout (%s)", d))
	err.Extensions = map[string]any{"code": CodeTimeout}
	return err
}

// Connection is what the resolvers know of the websocket connection a subscription runs on: how
// many subscriptions it holds, counted against the limit per connection.
type Connection struct {
	Subscriptions atomic.Int64
}

type connectionKey struct{}

// WithConnection marks ctx as a websocket connection's.
func WithConnection(ctx context.Context, c *Connection) context.Context {
	return context.WithValue(ctx, connectionKey{}, c)
}

// ConnectionOf returns the websocket connection of ctx, or nil for other transports.
func ConnectionOf(ctx context.Context) *Connection {
	c, _ := ctx.Value(connectionKey{}).(*Connection)
	return c
}

type eventIDsKey struct{}

type lastEventIDKey struct{}

// EventIDs carries the cursor of each event of an SSE stream from the subscription that sends
// it to the transport that writes it: one entry per event, in the order sent ("" for none).
type EventIDs struct {
	mu  sync.Mutex
	ids []string
}

// WithEventIDs marks ctx as an SSE stream's, whose events' ids the transport pops from ids; last
// is the Last-Event-ID the client sent when it reconnected ("" for none).
func WithEventIDs(ctx context.Context, ids *EventIDs, last string) context.Context {
	ctx = context.WithValue(ctx, eventIDsKey{}, ids)
	if last != "" {
		ctx = context.WithValue(ctx, lastEventIDKey{}, last)
	}
	return ctx
}

// EventIDsOf returns the event ids of ctx's SSE stream; nil on other transports. A subscription
// looks it up once, rather than through its context at every event it sends.
func EventIDsOf(ctx context.Context) *EventIDs {
	s, _ := ctx.Value(eventIDsKey{}).(*EventIDs)
	return s
}

// Note records the id of the next event a subscription sends on an SSE stream, before it sends
// it; nothing on a nil s (other transports).
func (s *EventIDs) Note(id string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.ids = append(s.ids, id)
	s.mu.Unlock()
}

// Pop returns the id of the next event written, "" when none was noted.
func (s *EventIDs) Pop() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ids) == 0 {
		return ""
	}
	id := s.ids[0]
	s.ids = s.ids[1:]
	return id
}

// LastEventID returns the Last-Event-ID an EventSource sent when it reconnected, if any.
func LastEventID(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(lastEventIDKey{}).(string)
	return id, ok
}
