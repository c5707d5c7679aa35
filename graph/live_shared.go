package graph

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"hash"
	"sync"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/cairnflow/cairn/graph/model"
)

// A node with many workflowEvents subscriptions sends each event to all that match it, and most
// ask for it the same way (a dashboard's query, once per open page). The hub reads and models
// each event once; sharedStreams makes its response once per shape as well: the first of the
// subscriptions of one shape to take an event makes the response (gqlgen resolves and encodes
// it), and the others send the same bytes. A shape is the query, its operation name and
// variables, and the caller (its role and token name): everything a response may depend on
// besides the event, which is the same for all of them (a response's nested fields read the
// workflow as loaded with the event). A response that carries errors is not shared.

// sharedStreamKey marks the context of a subscription operation; its value is the operation's
// sharedStream, where workflowEvents leaves its events.
type sharedStreamKey struct{}

// sharedStream is one subscription's events between workflowEvents and gqlgen: the response
// middleware takes each event from src, sends the response the event already has for the
// subscription's shape, or hands the event to gqlgen through gq to make it.
type sharedStream struct {
	shared atomic.Pointer[sharedChannels]
	end    sync.Once
}

type sharedChannels struct {
	src   <-chan *model.WorkflowEvent
	gq    chan *model.WorkflowEvent
	shape [32]byte
}

// shareStream puts the events of out, a workflowEvents stream of ctx's subscription, in the
// operation's sharedStream and returns the channel gqlgen is to read instead; out itself when the
// operation has none (a subscription served outside NewExecutor's server).
func shareStream(ctx context.Context, out <-chan *model.WorkflowEvent) <-chan *model.WorkflowEvent {
	s, _ := ctx.Value(sharedStreamKey{}).(*sharedStream)
	if s == nil || !graphql.HasOperationContext(ctx) {
		return out
	}
	// One slot: the middleware puts an event in it only right before gqlgen reads it.
	c := &sharedChannels{src: out, gq: make(chan *model.WorkflowEvent, 1), shape: shapeOf(ctx)}
	s.shared.Store(c)
	return c.gq
}

// shapeOf hashes what a subscription's responses depend on besides the event.
func shapeOf(ctx context.Context) [32]byte {
	oc := graphql.GetOperationContext(ctx)
	p, _ := PrincipalOf(ctx)
	vars, err := json.Marshal(oc.Variables) // map keys sorted: equal variables, equal bytes
	if err != nil {
		vars = nil // still a shape of its own: the query and caller are in it
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte(p.Role), []byte(p.Name), []byte(oc.OperationName), []byte(oc.RawQuery), vars} {
		writePart(h, part)
	}
	var key [32]byte
	h.Sum(key[:0])
	return key
}

// writePart writes b with its length first, so that no two lists of parts hash alike.
func writePart(h hash.Hash, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}

// shareSubscriptions adds the middleware that shares workflowEvents responses. It is the
// outermost response middleware: a response made once per shape has been through the others
// (fresh loaders, the byte budget) once, and is sent as it is to the rest.
func shareSubscriptions(srv *handler.Server) {
	srv.AroundOperations(func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
		if op := graphql.GetOperationContext(ctx).Operation; op == nil || op.Operation != ast.Subscription {
			return next(ctx)
		}
		return next(context.WithValue(ctx, sharedStreamKey{}, &sharedStream{}))
	})
	srv.AroundResponses(func(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
		s, _ := ctx.Value(sharedStreamKey{}).(*sharedStream)
		if s == nil {
			return next(ctx)
		}
		c := s.shared.Load()
		if c == nil {
			return next(ctx)
		}
		sender, _ := graphql.GetOperationContext(ctx).Stats.GetExtension(responseSenderExtension).(ResponseSender)
		for {
			var ev *model.WorkflowEvent
			select {
			case e, open := <-c.src:
				if !open {
					s.end.Do(func() { close(c.gq) })
					return next(ctx) // gqlgen reads the closed gq: the end of the stream
				}
				ev = e
			case <-ctx.Done():
				return next(ctx) // gqlgen sees ctx done as well
			}
			shared, maker := ev.Share(c.shape)
			if !maker {
				data, ok := shared.Wait(ctx)
				if !ok {
					return makeResponse(ctx, next, c.gq, ev, nil) // its maker could not share it: make this one's own
				}
				if sender != nil && sender.SendData(data) == nil {
					continue // sent: on to the next event without going back to gqlgen
				}
				return &graphql.Response{Data: data}
			}
			return makeResponse(ctx, next, c.gq, ev, shared)
		}
	})
}

// ResponseSender sends a response's data as the next message of one subscription, on the
// connection and in the protocol it came by, as gqlgen's transport would send the response
// {"data": data}. A transport that has one for a subscription sets it on the operation's context
// (SetResponseSender): the response a subscription shares with others of its shape then goes out
// as the bytes its maker made, instead of through gqlgen, which would encode it again (and check
// every byte of it) for each subscription. SendData is called by one goroutine at a time; an
// error leaves the response to gqlgen.
type ResponseSender interface {
	SendData(data []byte) error
}

// responseSenderExtension is the operation statistics' extension that holds a ResponseSender.
const responseSenderExtension = "cairn.responseSender"

// SetResponseSender gives the subscription operation oc a sender of its responses.
func SetResponseSender(oc *graphql.OperationContext, s ResponseSender) {
	oc.Stats.SetExtension(responseSenderExtension, s)
}

// makeResponse has gqlgen make the response to ev and, when shared is set, shares it with the
// subscriptions of the same shape (or tells them to make their own when it carries errors).
func makeResponse(ctx context.Context, next graphql.ResponseHandler, gq chan<- *model.WorkflowEvent, ev *model.WorkflowEvent, shared *model.SharedResponse) *graphql.Response {
	var data []byte
	if shared != nil {
		defer func() { shared.Fill(data) }() // nil too, lest the others wait for ever
	}
	select {
	case gq <- ev: // gq is empty: gqlgen took every event it was given, or ended the stream
	case <-ctx.Done():
		return nil
	}
	resp := next(ctx)
	if shared != nil && resp != nil && len(resp.Errors) == 0 && len(resp.Extensions) == 0 && resp.Data != nil {
		data = bytes.Clone(resp.Data) // gqlgen reuses its buffer for the next event
	}
	return resp
}
