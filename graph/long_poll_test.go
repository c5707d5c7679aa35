package graph_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// postWithin sends a request over real HTTP with a client that gives up after limit.
func postWithin(t *testing.T, b *bundle, limit time.Duration, query string, vars map[string]any) (int, gqlResponse) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	require.NoError(t, err)
	resp, err := (&http.Client{Timeout: limit}).Post(b.srv.URL+"/graphql", "application/json", strings.NewReader(string(body)))
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out gqlResponse
	require.NoError(t, json.Unmarshal(raw, &out), string(raw))
	return resp.StatusCode, out
}

// A request holds one long poll: a second pollTasks, aliased or in a fragment, is refused before
// anything is leased.
func TestOnePollTasksPerRequest(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		addTask(t, b, "f")
		const in = `(input: {functions: ["f"], waitMs: 60000})`
		for _, doc := range []string{
			`mutation { a: pollTasks` + in + ` { tasks { id } } b: pollTasks` + in + ` { tasks { id } } }`,
			`mutation { a: pollTasks` + in + ` { tasks { id } } ...more } fragment more on Mutation { b: pollTasks` + in + ` { tasks { id } } }`,
			`mutation { pollTasks` + in + ` { tasks { id } } ... on Mutation { again: pollTasks` + in + ` { tasks { id } } } }`,
		} {
			_, resp := postWithin(t, b, 30*time.Second, doc, nil)
			require.Len(t, resp.Errors, 1, doc)
			require.Equal(t, "INVALID_INPUT", resp.Errors[0].Extensions["code"], doc)
			require.Equal(t, "pollTasks", resp.Errors[0].Extensions["field"], doc)
			require.Contains(t, resp.Errors[0].Message, "one pollTasks")
		}
		// Nothing was leased: the task is still offered, on its first attempt.
		var p polled
		b.must(t, pollQuery, &p, map[string]any{"in": map[string]any{"functions": []string{"f"}}})
		require.Len(t, p.PollTasks.Tasks, 1)
		require.Equal(t, 1, p.PollTasks.Tasks[0].Attempt)
		// The same key twice is one poll (GraphQL merges them): allowed.
		_, resp := postWithin(t, b, 30*time.Second, `mutation { p: pollTasks(input: {functions: ["g"]}) { tasks { id } } p: pollTasks(input: {functions: ["g"]}) { tasks { id } } }`, nil)
		require.Empty(t, resp.Errors)
	})
}

// A long poll ends with no task before the request timeout instead of holding the request for
// its whole wait.
func TestLongPollEndsWithinTheRequestTimeout(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store, func(c *server.Config) { c.RequestTimeout = 2 * time.Second })
		// The client gives up long before the 60 s wait asked for.
		status, resp := postWithin(t, b, 30*time.Second, pollQuery, map[string]any{"in": map[string]any{"functions": []string{"nothing"}, "waitMs": 60000}})
		require.Equal(t, http.StatusOK, status)
		require.Empty(t, resp.Errors)
		var data polled
		require.NoError(t, json.Unmarshal(resp.Data, &data))
		require.Empty(t, data.PollTasks.Tasks)

		// Streams are not requests of that kind: an SSE subscription outlives the timeout.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sse := sseEvents(t, b, ctx, map[string]any{"after": zeroCursor(t, b)})
		defer sse.Close()
		time.Sleep(3 * time.Second)
		id := b.start(t, nil)
		require.Equal(t, id, sse.nextEvent().WorkflowID)
	})
}
