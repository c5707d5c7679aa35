package server_test

import (
	"context"
	"encoding/json"
	"strings"
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
