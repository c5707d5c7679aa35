package ui_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/internal/nodetest"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/ui"
	"github.com/cairnflow/cairn/workflow"
)

// reviewForm is the JSON Schema of the user task of TestFormInChromium: every kind of input the
// page renders (a box, a number with a bound, a choice, a text).
const reviewForm = `{"type": "object", "title": "Review the order", "required": ["ok", "score"], "properties": {
	"ok": {"type": "boolean", "title": "Approved"},
	"score": {"type": "integer", "minimum": 1, "title": "Score"},
	"level": {"enum": ["low", "high"], "title": "Level"},
	"note": {"type": "string", "title": "Note"}}}`

// TestFormInChromium serves the API and the dashboard from one server (as cairn serve does) on
// SQLite, puts a workflow in a MANUAL state with a form, and fills the form in Chromium
// (testdata/browser/form.mjs): a refused submission shows its INVALID_INPUT by the form, a valid
// one finishes the workflow with the data. Without node, npm or Chromium it skips (fails under
// CI=true).
func TestFormInChromium(t *testing.T) {
	t.Parallel()
	node, dir, browser := browserTools(t, "form.mjs")
	store := dbtest.Open(t, persistence.KindSQLite)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	engine := engine.New(store, engine.Options{Logger: log})
	ctx := context.Background()
	_, err := engine.Register(ctx, workflow.Definition{Type: "form.review", States: []workflow.State{
		{Name: "start", Kind: workflow.Start, Next: []string{"review"}, Handler: func(workflow.StepContext) (workflow.Next, error) { return workflow.MoveTo("review"), nil }},
		{Name: "review", Kind: workflow.Manual, Next: []string{"done"}, FormSchema: json.RawMessage(reviewForm)},
		{Name: "done", Kind: workflow.End},
	}})
	require.NoError(t, err)

	mux := http.NewServeMux()
	mux.Handle("/", server.New(server.Config{Engine: engine, Logger: log, PollInterval: 50 * time.Millisecond}))
	dashboard := ui.Handler("/ui")
	mux.Handle("/ui/", dashboard)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	call := func(query string, vars map[string]any) map[string]any {
		body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
		require.NoError(t, err)
		resp, err := http.Post(srv.URL+"/graphql", "application/json", strings.NewReader(string(body)))
		require.NoError(t, err)
		defer resp.Body.Close()
		var out struct {
			Data   map[string]any
			Errors []any
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		require.Empty(t, out.Errors)
		return out.Data
	}
	started := call(`mutation { startWorkflow(input: {type: "form.review"}) { workflow { id } } }`, nil)
	id := started["startWorkflow"].(map[string]any)["workflow"].(map[string]any)["id"].(string)
	// No worker runs here: an operator's move puts the workflow in the form's state.
	call(`mutation($id: ID!) { updateWorkflow(input: {id: $id, state: "review"}) { workflow { id } } }`, map[string]any{"id": id})

	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, node, "form.mjs", srv.URL, id)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CHROMIUM="+browser)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the browser run failed:\n%s", out)
	require.Equal(t, "ok", strings.TrimSpace(string(out)))

	got := call(`query($id: ID!) { workflow(id: $id) { status variables } }`, map[string]any{"id": id})["workflow"].(map[string]any)
	require.Equal(t, "FINISHED", got["status"])
	require.Equal(t, map[string]any{"ok": true, "score": float64(4), "level": "high", "note": "looks right"}, got["variables"].(map[string]any)["review"])
}

// browserTools installs testdata/browser's npm packages (npm ci from its lock file) with the given
// scripts into a temporary folder and returns node, that folder and Chromium's path; it skips
// without them (fails under CI=true).
func browserTools(t *testing.T, scripts ...string) (node, dir, browser string) {
	t.Helper()
	browser = nodetest.Chromium(t)
	node, dir = nodetest.Package(t, filepath.Join("testdata", "browser"), scripts...)
	return node, dir, browser
}
