package graph

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph/model"
	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// TestSubscriptionsOfOneShapeShareEachEventsResponse: subscriptions that ask for an event the same
// way (query and variables) get one response made once; those that ask another way (other fields,
// or the same query with other variables) get their own, each as it asked.
func TestSubscriptionsOfOneShapeShareEachEventsResponse(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		eng := engine.New(store, engine.Options{Logger: log})
		RegisterFanOutTypes(t, eng)
		srv := NewExecutor(Config{Engine: eng, Logger: log, PollInterval: 50 * time.Millisecond})
		// Counts the responses gqlgen makes: each resolves the event's cursor once.
		var made atomic.Int64
		srv.AroundFields(func(ctx context.Context, next graphql.Resolver) (any, error) {
			if fc := graphql.GetFieldContext(ctx); fc.Object == "WorkflowEvent" && fc.Field.Name == "cursor" {
				made.Add(1)
			}
			return next(ctx)
		})
		srv.AddTransport(transport.Websocket{})
		hs := httptest.NewServer(srv)
		t.Cleanup(hs.Close)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http"), &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
		require.NoError(t, err)
		defer func() { _ = conn.CloseNow() }()
		require.NoError(t, wsjson.Write(ctx, conn, map[string]any{"type": "connection_init"}))
		var ack struct{ Type string }
		require.NoError(t, wsjson.Read(ctx, conn, &ack))
		require.Equal(t, "connection_ack", ack.Type)

		const withType = `subscription($f: WorkflowFilter, $t: Boolean!) { workflowEvents(filter: $f) { cursor workflowId type @include(if: $t) } }`
		const withStatus = `subscription($f: WorkflowFilter) { workflowEvents(filter: $f) { cursor workflowId status } }`
		other := map[string]any{"types": []string{"test.other"}}
		subs := map[string]map[string]any{
			"a1": {"query": withType, "variables": map[string]any{"f": other, "t": true}},
			"a2": {"query": withType, "variables": map[string]any{"f": other, "t": true}},
			"a3": {"query": withType, "variables": map[string]any{"f": other, "t": true}},
			"b":  {"query": withStatus, "variables": map[string]any{"f": other}},
			"c":  {"query": withType, "variables": map[string]any{"f": other, "t": false}},
		}
		for id, payload := range subs {
			require.NoError(t, wsjson.Write(ctx, conn, map[string]any{"id": id, "type": "subscribe", "payload": payload}))
		}
		type message struct {
			ID, Type string
			Payload  json.RawMessage
		}
		in := make(chan message, 1000)
		go func() {
			defer close(in)
			for {
				var m message
				if wsjson.Read(ctx, conn, &m) != nil {
					return
				}
				in <- m
			}
		}()
		// next reads the next event of each subscription, keyed by the subscription's id.
		next := func() map[string]json.RawMessage {
			got := map[string]json.RawMessage{}
			for len(got) < len(subs) {
				m, ok := <-in
				require.True(t, ok, "the websocket closed")
				require.Equal(t, "next", m.Type, string(m.Payload))
				require.NotContains(t, got, m.ID, "a second event before the others had the first")
				got[m.ID] = m.Payload
			}
			return got
		}
		start := func() string {
			ids, err := eng.StartMany(ctx, []workflow.StartParams{{Type: "test.other"}})
			require.NoError(t, err)
			return encodeID(kindWorkflow, ids[0].Workflow.ID)
		}
		// The subscriptions are live once each has had an event: start workflows until they have,
		// and until no event is left to come.
		for seen := map[string]bool{}; len(seen) < len(subs); {
			start()
			for quiet := false; !quiet; {
				select {
				case m, ok := <-in:
					require.True(t, ok, "the websocket closed")
					seen[m.ID] = true
				case <-time.After(300 * time.Millisecond):
					quiet = true
				}
			}
		}

		before := made.Load()
		id := start()
		got := next()
		require.EqualValues(t, 3, made.Load()-before, "one response made per shape (a, b, c), not per subscription")
		require.JSONEq(t, `{"data":{"workflowEvents":{"cursor":`+cursorOf(t, got["a1"])+`,"workflowId":"`+id+`","type":"CREATED"}}}`, string(got["a1"]))
		require.Equal(t, string(got["a1"]), string(got["a2"]))
		require.Equal(t, string(got["a1"]), string(got["a3"]))
		require.JSONEq(t, `{"data":{"workflowEvents":{"cursor":`+cursorOf(t, got["a1"])+`,"workflowId":"`+id+`","status":"CREATED"}}}`, string(got["b"]))
		require.JSONEq(t, `{"data":{"workflowEvents":{"cursor":`+cursorOf(t, got["a1"])+`,"workflowId":"`+id+`"}}}`, string(got["c"]), "its variables leave type out")
	})
}

// cursorOf returns the cursor of a workflowEvents response, as JSON.
func cursorOf(t *testing.T, payload json.RawMessage) string {
	var resp struct {
		Data struct {
			WorkflowEvents struct{ Cursor json.RawMessage }
		}
	}
	require.NoError(t, json.Unmarshal(payload, &resp))
	require.NotEmpty(t, resp.Data.WorkflowEvents.Cursor)
	return string(resp.Data.WorkflowEvents.Cursor)
}

// A maker whose request ends before gqlgen takes its event (the slot still holds the one before)
// returns instead of blocking on the send, and releases the subscriptions waiting for its
// response, which then make their own.
func TestAMakerWhoseRequestEndsReleasesItsWaiters(t *testing.T) {
	ev := model.NewWorkflowEvent(&persistence.ChangeEvent{}, "c", "w", nil)
	shared, maker := ev.Share([32]byte{7})
	require.True(t, maker)
	waiter, maker := ev.Share([32]byte{7})
	require.False(t, maker)

	gq := make(chan *model.WorkflowEvent, 1)
	gq <- ev // gqlgen never took it: its stream ended
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan *graphql.Response, 1)
	go func() {
		done <- makeResponse(ctx, func(context.Context) *graphql.Response {
			t.Error("gqlgen was asked for a response to an event it was never given")
			return nil
		}, gq, ev, shared)
	}()
	select {
	case resp := <-done:
		require.Nil(t, resp)
	case <-time.After(10 * time.Second):
		t.Fatal("the maker still waits to hand gqlgen its event")
	}
	_, ok := waiter.Wait(context.Background())
	require.False(t, ok, "the waiter makes its own response")
}
