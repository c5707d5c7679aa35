package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// sseNext is one "next" event of a stream: its id line and its data.
type sseNext struct{ id, data string }

// openEvents opens an event stream of query and returns its "next" events.
func openEvents(t *testing.T, ctx context.Context, b *bundle, query string) <-chan sseNext {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.srv.URL+"/graphql?"+url.Values{"query": {query}}.Encode(), nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	out := make(chan sseNext, 100)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		r := bufio.NewScanner(resp.Body)
		var ev sseNext
		typ := ""
		for r.Scan() {
			switch line := r.Text(); {
			case line == "":
				if typ == "next" {
					out <- ev
				}
				typ, ev = "", sseNext{}
			case strings.HasPrefix(line, "event: "):
				typ = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return out
}

// Event streams of one shape share each event's response too: each stream gets every event, in
// order, with its cursor as the event's id, whichever stream made the response.
func TestEventStreamsOfOneShapeSendTheSharedResponse(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		sendersMu.Lock()
		defer sendersMu.Unlock()
		b := setup(t, store, func(c *server.Config) { c.PollInterval = 50 * time.Millisecond })
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		const query = `subscription { workflowEvents(filter: {types: ["test.flow"]}) { cursor type } }`
		streams := []<-chan sseNext{openEvents(t, ctx, b, query), openEvents(t, ctx, b, query)}
		start := func() {
			_, resp := b.post(t, `mutation { startWorkflow(input: {type: "test.flow"}) { created } }`, nil)
			require.Empty(t, resp.Errors)
		}
		// The streams are live once each has had an event.
		live := make([]bool, len(streams))
		for n := 0; n < len(streams); {
			start()
			for i, s := range streams {
				select {
				case _, ok := <-s:
					require.True(t, ok, "the stream ended")
					if !live[i] {
						live[i] = true
						n++
					}
				case <-time.After(300 * time.Millisecond):
				}
			}
		}
		for _, s := range streams { // drain what is left of the warm-up
			for quiet := false; !quiet; {
				select {
				case <-s:
				case <-time.After(300 * time.Millisecond):
					quiet = true
				}
			}
		}

		sent := server.SentBySenders()
		for range 3 {
			start()
		}
		var cursors [][]string
		for _, s := range streams {
			var got []string
			for range 3 {
				ev := <-s
				var resp struct {
					Data struct{ WorkflowEvents struct{ Cursor, Type string } }
				}
				require.NoError(t, json.Unmarshal([]byte(ev.data), &resp), ev.data)
				require.Equal(t, "CREATED", resp.Data.WorkflowEvents.Type)
				require.Equal(t, resp.Data.WorkflowEvents.Cursor, ev.id, "the id line is the event's cursor")
				got = append(got, ev.id)
			}
			cursors = append(cursors, got)
		}
		require.Equal(t, cursors[0], cursors[1])
		// Some of the responses went out through a sender. Not necessarily all three: an event of
		// the warm-up that came late is among the three read, and sharing is a saving, not a
		// promise (a stream reading its backlog makes its own responses).
		require.Positive(t, server.SentBySenders()-sent, "no stream sent a response the other made")
	})
}
