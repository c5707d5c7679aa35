package graph_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph"
	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/internal/nodetest"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// nodePackage installs the npm package in graph/testdata/<name> into a temporary folder and
// returns it with the node binary, or skips (fails under CI=true) when node or npm is missing.
func nodePackage(t *testing.T, name string, files ...string) (node, dir string) {
	t.Helper()
	return nodetest.Package(t, filepath.Join("testdata", name), files...)
}

// graphqlWS runs the graphql-ws client once and returns the lines it printed.
func graphqlWS(t *testing.T, node, dir string, b *bundle, query string, vars map[string]any, take int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := json.Marshal(vars)
	require.NoError(t, err)
	cmd := exec.CommandContext(ctx, node, "client.mjs", "ws"+strings.TrimPrefix(b.srv.URL, "http")+"/graphql", query, string(v), strconv.Itoa(take))
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestGraphQLWSClientResumesAndCompletes drives workflowEvents and workflowUpdated with the
// graphql-ws client, on both backends: a subscription taken in two parts (the second resuming
// from the last cursor of the first, while workflows go on starting) gets every event once, in
// order; workflowUpdated completes when its workflow has ended; a bad cursor is a coded error.
func TestGraphQLWSClientResumesAndCompletes(t *testing.T) {
	t.Parallel()
	node, dir := nodePackage(t, "graphql-ws", "client.mjs")
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store, func(c *server.Config) { c.PollInterval = 50 * time.Millisecond })
		var ids []string
		for range 4 {
			ids = append(ids, b.start(t, map[string]any{"businessKey": "gw"}))
			b.start(t, map[string]any{"businessKey": "other"})
		}
		filter := map[string]any{"businessKey": "gw"}
		cursorOf := func(line string) event {
			var msg struct {
				Data struct{ WorkflowEvents event }
			}
			require.NoError(t, json.Unmarshal([]byte(line), &msg), line)
			return msg.Data.WorkflowEvents
		}
		first := graphqlWS(t, node, dir, b, eventsQuery, map[string]any{"filter": filter, "after": graph.EventCursorStart()}, 3)
		require.Len(t, first, 3)
		var got []event
		for _, l := range first {
			got = append(got, cursorOf(l))
		}
		for range 3 {
			ids = append(ids, b.start(t, map[string]any{"businessKey": "gw"}))
		}
		second := graphqlWS(t, node, dir, b, eventsQuery, map[string]any{"filter": filter, "after": got[2].Cursor}, 4)
		for _, l := range second {
			got = append(got, cursorOf(l))
		}
		require.Len(t, got, len(ids))
		for i, ev := range got {
			require.Equal(t, ids[i], ev.WorkflowID, "event %d", i)
		}

		var out map[string]any
		b.must(t, `mutation($id: ID!) { cancelWorkflow(input: {id: $id}) { workflow { id } } }`, &out, map[string]any{"id": ids[0]})
		lines := graphqlWS(t, node, dir, b, `subscription($id: ID!) { workflowUpdated(id: $id) { id status } }`, map[string]any{"id": ids[0]}, 0)
		require.Len(t, lines, 2, "%v", lines)
		require.Contains(t, lines[0], `"CANCELLED"`)
		require.Equal(t, "complete", lines[1])

		lines = graphqlWS(t, node, dir, b, eventsQuery, map[string]any{"after": "not-a-cursor"}, 0)
		require.Len(t, lines, 2, "a coded error, then complete: %v", lines)
		require.Contains(t, lines[0], `"code":"INVALID_INPUT"`)
		require.Contains(t, lines[0], `"field":"after"`)
		require.Equal(t, "complete", lines[1])
	})
}
