package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// The messages gqlgen's websocket transport sends, in both protocols, are written by cairn's
// encoder as they are, without a second json.Marshal of their payload: the encoder knows their
// types' shape (gqlgen's own unexported types), checked here on the types a real subscription
// sends, not on look-alikes.
func TestTheTransportsMessagesAreWrittenWithoutASecondEncoding(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		const query = `subscription($id: ID!) { workflowUpdated(id: $id) { status } }`
		for _, protocol := range []struct{ name, start, next string }{
			{"graphql-transport-ws", "subscribe", "next"},
			{"graphql-ws", "start", "data"},
		} {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.srv.URL, "http")+"/graphql",
				&websocket.DialOptions{Subprotocols: []string{protocol.name}})
			require.NoError(t, err, protocol.name)
			read := func(want string) wsMessage {
				for {
					var m wsMessage
					require.NoError(t, wsjson.Read(ctx, conn, &m), protocol.name)
					if m.Type == want {
						return m
					}
					require.Contains(t, []string{"ka", "ping", "pong"}, m.Type, "%s: %+v", protocol.name, m)
				}
			}
			require.NoError(t, wsjson.Write(ctx, conn, wsMessage{Type: "connection_init"}))
			read("connection_ack")
			_, started := b.post(t, `mutation { startWorkflow(input: {type: "test.flow"}) { workflow { id } } }`, nil)
			require.Empty(t, started.Errors)
			var data struct {
				StartWorkflow struct{ Workflow struct{ ID string } }
			}
			require.NoError(t, json.Unmarshal(started.Data, &data))
			payload, err := json.Marshal(map[string]any{"query": query, "variables": map[string]any{"id": data.StartWorkflow.Workflow.ID}})
			require.NoError(t, err)
			require.NoError(t, wsjson.Write(ctx, conn, wsMessage{ID: "1", Type: protocol.start, Payload: payload}))
			m := read(protocol.next)
			require.Equal(t, "1", m.ID)
			require.Contains(t, string(m.Payload), `"status":"CREATED"`, protocol.name)
			_ = conn.Close(websocket.StatusNormalClosure, "")
			cancel()
		}
		plans := server.MessagePlans()
		for _, typ := range []string{"graphqltransportwsMessage", "graphqlwsMessage"} {
			require.Contains(t, plans, typ, "gqlgen's message types: %v", plans)
			require.True(t, plans[typ], "%s is encoded by json.Marshal", typ)
		}
	})
}

// sendersMu keeps the tests that count the senders' messages (server.SentBySenders counts those of
// every server of the process) from running at the same time: each subtest holds it throughout.
var sendersMu sync.Mutex

// Subscriptions of one shape on one websocket share each event's response: one of them has gqlgen
// make it, the others send its bytes through their senders. Each gets its own messages, with its
// id and its protocol's message type, in the order of the events, in both protocols; one that
// stops gets no more.
func TestSubscriptionsOfOneShapeSendTheSharedResponseInTheirOwnMessages(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		sendersMu.Lock()
		defer sendersMu.Unlock()
		b := setup(t, store)
		const typed = `subscription { workflowEvents(filter: {types: ["test.flow"]}) { cursor workflowId type } }`
		const status = `subscription { workflowEvents(filter: {types: ["test.flow"]}) { cursor status } }`
		subs := map[string]string{"a1": typed, "a2": typed, "a3": typed, "b": status}
		for _, protocol := range []struct{ name, start, next, stop string }{
			{"graphql-transport-ws", "subscribe", "next", "complete"},
			{"graphql-ws", "start", "data", "stop"},
		} {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.srv.URL, "http")+"/graphql",
				&websocket.DialOptions{Subprotocols: []string{protocol.name}})
			require.NoError(t, err, protocol.name)
			require.NoError(t, wsjson.Write(ctx, conn, wsMessage{Type: "connection_init"}))
			in := make(chan wsMessage, 1000)
			go func() {
				defer close(in)
				for {
					var m wsMessage
					if wsjson.Read(ctx, conn, &m) != nil {
						return
					}
					if m.Type != "ka" && m.Type != "ping" && m.Type != "pong" {
						in <- m
					}
				}
			}()
			require.Equal(t, "connection_ack", (<-in).Type, protocol.name)
			for id, query := range subs {
				payload, err := json.Marshal(map[string]string{"query": query})
				require.NoError(t, err)
				require.NoError(t, wsjson.Write(ctx, conn, wsMessage{ID: id, Type: protocol.start, Payload: payload}))
			}
			start := func() {
				_, resp := b.post(t, `mutation { startWorkflow(input: {type: "test.flow"}) { created } }`, nil)
				require.Empty(t, resp.Errors)
			}
			// The subscriptions are live once each has had an event: start workflows until they
			// have, and until no event is left to come.
			for seen := map[string]bool{}; len(seen) < len(subs); {
				start()
				for quiet := false; !quiet; {
					select {
					case m, ok := <-in:
						require.True(t, ok, "%s: the websocket closed", protocol.name)
						seen[m.ID] = true
					case <-time.After(300 * time.Millisecond):
						quiet = true
					}
				}
			}

			sent := server.SentBySenders()
			for range 3 {
				start()
			}
			got := map[string][]string{}
			for n := 0; n < 3*len(subs); n++ {
				m, ok := <-in
				require.True(t, ok, "%s: the websocket closed", protocol.name)
				require.Equal(t, protocol.next, m.Type, "%s: %s", protocol.name, m.Payload)
				var p struct {
					Data struct{ WorkflowEvents map[string]any }
				}
				require.NoError(t, json.Unmarshal(m.Payload, &p), string(m.Payload))
				got[m.ID] = append(got[m.ID], p.Data.WorkflowEvents["cursor"].(string))
				if m.ID == "b" {
					require.Equal(t, "CREATED", p.Data.WorkflowEvents["status"])
				} else {
					require.Equal(t, "CREATED", p.Data.WorkflowEvents["type"])
				}
			}
			require.Len(t, got["a1"], 3, "%s: %v", protocol.name, got)
			for id := range subs {
				require.Equal(t, got["a1"], got[id], "%s: %s has the events of a1, in their order", protocol.name, id)
			}
			// Some of the responses went out through a sender (not necessarily all: a late event
			// of the warm-up may be among those read, and sharing is a saving, not a promise).
			require.Positive(t, server.SentBySenders()-sent, "%s: no subscription sent a response another made", protocol.name)

			require.NoError(t, wsjson.Write(ctx, conn, wsMessage{ID: "a2", Type: protocol.stop}))
			if m := <-in; m.ID == "a2" {
				require.Equal(t, "complete", m.Type, protocol.name)
			} else {
				in <- m // not the end of a2: read again below
			}
			start()
			for n := 0; n < len(subs)-1; n++ {
				m := <-in
				require.NotEqual(t, "a2", m.ID, "%s: a2 stopped: %+v", protocol.name, m)
			}
			_ = conn.Close(websocket.StatusNormalClosure, "")
			cancel()
		}
	})
}
