package graph_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sse "github.com/tmaxmax/go-sse"

	"github.com/cairnflow/cairn/graph"
	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// eventSourceURL is the GET URL a browser's EventSource opens for an operation.
func eventSourceURL(b *bundle, query string, vars map[string]any) string {
	q := url.Values{"query": {query}}
	if vars != nil {
		v, _ := json.Marshal(vars)
		q.Set("variables", string(v))
	}
	return b.srv.URL + "/graphql?" + q.Encode()
}

// TestEventSourceResumesWithLastEventID follows workflowEvents with an EventSource-compatible
// client (GET, reconnecting with Last-Event-ID), cuts its connection twice while workflows start,
// and checks that it gets every event once, in order, each with its cursor as the event's id.
func TestEventSourceResumesWithLastEventID(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store, func(c *server.Config) { c.PollInterval = 50 * time.Millisecond })
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, eventSourceURL(b, eventsQuery, map[string]any{
			"filter": map[string]any{"businessKey": "es"}, "after": graph.EventCursorStart()}), nil)
		require.NoError(t, err)
		client := &sse.Client{HTTPClient: http.DefaultClient, Backoff: sse.Backoff{InitialInterval: 20 * time.Millisecond, Multiplier: 1, Jitter: -1}}
		conn := client.NewConnection(req)
		var mu sync.Mutex
		var got []event
		conn.SubscribeEvent("next", func(e sse.Event) {
			var resp struct {
				Data   struct{ WorkflowEvents event }
				Errors []gqlError
			}
			if json.Unmarshal([]byte(e.Data), &resp) != nil || len(resp.Errors) > 0 {
				return
			}
			ev := resp.Data.WorkflowEvents
			if ev.Cursor != e.LastEventID {
				ev.Type = "the id line is not the cursor: " + e.LastEventID
			}
			mu.Lock()
			got = append(got, ev)
			mu.Unlock()
		})
		connected := make(chan error, 1)
		go func() { connected <- conn.Connect() }()
		received := func(n int) []event {
			t.Helper()
			require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= n }, 30*time.Second, 10*time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			return append([]event(nil), got...)
		}

		var ids []string
		for round := 0; round < 3; round++ {
			for i := 0; i < 4; i++ {
				ids = append(ids, b.start(t, map[string]any{"businessKey": "es"}))
				b.start(t, map[string]any{"businessKey": "other"})
			}
			received(len(ids))
			b.srv.CloseClientConnections() // the client reconnects with Last-Event-ID
		}
		ids = append(ids, b.start(t, map[string]any{"businessKey": "es"}))
		received(len(ids))
		time.Sleep(200 * time.Millisecond) // a duplicate would arrive now
		all := received(len(ids))
		require.Len(t, all, len(ids), "nothing repeated")
		for i, ev := range all {
			require.Equal(t, "CREATED", ev.Type)
			require.Equal(t, ids[i], ev.WorkflowID, "event %d", i)
		}
		cancel()
		require.ErrorIs(t, <-connected, context.Canceled)
	})
}

// sseRaw opens an SSE request and returns its events (type and data) until the stream ends.
func sseRaw(t *testing.T, target string, header http.Header) <-chan [2]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	out := make(chan [2]string, 100)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		r := bufio.NewReader(resp.Body)
		var typ, data string
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				if !errors.Is(err, io.EOF) && ctx.Err() == nil {
					out <- [2]string{"read error", err.Error()}
				}
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "":
				if typ != "" {
					out <- [2]string{typ, data}
				}
				typ, data = "", ""
			case strings.HasPrefix(line, "event: "):
				typ = line[len("event: "):]
			case strings.HasPrefix(line, "data:"):
				data = strings.TrimPrefix(line[len("data:"):], " ")
			}
		}
	}()
	return out
}

func nextSSE(t *testing.T, ch <-chan [2]string) [2]string {
	t.Helper()
	select {
	case ev, ok := <-ch:
		require.True(t, ok, "the stream ended")
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no event")
	}
	return [2]string{}
}

func TestEventSourceErrorsThenComplete(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store, func(c *server.Config) { c.PollInterval = 50 * time.Millisecond })
		for name, tc := range map[string]struct {
			query  string
			vars   map[string]any
			header http.Header
			code   string
		}{
			"bad Last-Event-ID": {eventsQuery, nil, http.Header{"Last-Event-Id": {"not-a-cursor"}}, "INVALID_INPUT"},
			"bad after":         {eventsQuery, map[string]any{"after": "nope"}, nil, "INVALID_INPUT"},
			"unknown workflow":  {`subscription($id: ID!) { workflowUpdated(id: $id) { id } }`, map[string]any{"id": "V29ya2Zsb3c6OTk5OTk5"}, nil, ""},
		} {
			ch := sseRaw(t, eventSourceURL(b, tc.query, tc.vars), tc.header)
			ev := nextSSE(t, ch)
			require.Equal(t, "next", ev[0], name)
			var resp struct{ Errors []gqlError }
			require.NoError(t, json.Unmarshal([]byte(ev[1]), &resp), name)
			require.NotEmpty(t, resp.Errors, name)
			if tc.code != "" {
				require.Equal(t, tc.code, resp.Errors[0].Extensions["code"], name)
			} else {
				require.Contains(t, []any{"NOT_FOUND", "INVALID_INPUT"}, resp.Errors[0].Extensions["code"], name)
			}
			require.Equal(t, "complete", nextSSE(t, ch)[0], name)
		}

		// workflowUpdated completes when its workflow ends.
		id := b.start(t, nil)
		ch := sseRaw(t, eventSourceURL(b, `subscription($id: ID!) { workflowUpdated(id: $id) { id status } }`, map[string]any{"id": id}), nil)
		require.Contains(t, nextSSE(t, ch)[1], `"CREATED"`)
		var out map[string]any
		b.must(t, `mutation($id: ID!) { cancelWorkflow(input: {id: $id}) { workflow { id } } }`, &out, map[string]any{"id": id})
		require.Contains(t, nextSSE(t, ch)[1], `"CANCELLED"`)
		require.Equal(t, "complete", nextSSE(t, ch)[0])

		// A mutation is never run by GET, even as an event stream (a cross-site EventSource
		// would otherwise run it with the user's credentials).
		req, err := http.NewRequest(http.MethodGet, eventSourceURL(b, `mutation { startWorkflow(input: {type: "test.flow"}) { created } }`, nil), nil)
		require.NoError(t, err)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	})
}

func TestWorkflowUpdatedCompletesOverWebsocket(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		id := b.start(t, nil)
		ws, _, err := dialWS(t, b, "")
		require.NoError(t, err)
		ws.init()
		ws.subscribe("u", `subscription($id: ID!) { workflowUpdated(id: $id) { id status } }`, map[string]any{"id": id})
		require.Contains(t, string(ws.next().Payload), `"CREATED"`)
		var out map[string]any
		b.must(t, `mutation($id: ID!) { cancelWorkflow(input: {id: $id}) { workflow { id } } }`, &out, map[string]any{"id": id})
		m := ws.next()
		require.Equal(t, "next", m.Type)
		require.Contains(t, string(m.Payload), `"CANCELLED"`)
		m = ws.next()
		require.Equal(t, "complete", m.Type)
		require.Equal(t, "u", m.ID)
	})
}

// TestEventSourcePingerStopsWithTheStream ends many short event streams while their pinger ticks
// every few microseconds: the pinger must be done writing before the handler returns (a write after
// it would race with the server finishing the response, which -race reports).
func TestEventSourcePingerStopsWithTheStream(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, persistence.KindSQLite)
	b := setup(t, store, func(c *server.Config) { c.PingInterval = 5 * time.Microsecond })
	target := eventSourceURL(b, eventsQuery, map[string]any{"after": "nope"})
	for i := 0; i < 200; i++ {
		ch := sseRaw(t, target, nil)
		ev := nextSSE(t, ch)
		require.Equal(t, "next", ev[0])
		require.Contains(t, ev[1], "INVALID_INPUT")
		require.Equal(t, "complete", nextSSE(t, ch)[0])
		for range ch { // to the end of the stream
		}
	}
}
