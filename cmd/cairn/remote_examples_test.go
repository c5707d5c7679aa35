package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence/dbtest"
)

// graphqlAs posts a GraphQL request with a bearer token and decodes its data into out; an error
// in the answer fails the test.
func (n *node) graphqlAs(t *testing.T, token, query string, variables map[string]any, out any) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": query, "variables": variables})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, "http://"+n.addr+"/graphql", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var envelope struct {
		Data   json.RawMessage  `json:"data"`
		Errors []map[string]any `json:"errors"`
	}
	require.NoError(t, json.Unmarshal(raw, &envelope), string(raw))
	require.Empty(t, envelope.Errors, string(raw))
	require.NoError(t, json.Unmarshal(envelope.Data, out))
}

// exampleWorker is a worker process of examples/remote-workers.
type exampleWorker struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	output bytes.Buffer
	exited chan struct{}
}

func (w *exampleWorker) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.output.Write(p)
}

func (w *exampleWorker) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.output.String()
}

// kill ends the worker at once (SIGKILL): whatever it holds stays leased until its lease runs out.
func (w *exampleWorker) kill() {
	_ = w.cmd.Process.Kill()
	<-w.exited
}

// startExampleWorker runs one of the example workers against a node, killed when the test ends.
func startExampleWorker(t *testing.T, interpreter, script, url, token, name string, leaseMs int) *exampleWorker {
	t.Helper()
	cmd := exec.Command(interpreter, script, "--name", name)
	cmd.Env = append(os.Environ(), "CAIRN_URL="+url, "CAIRN_TOKEN="+token, fmt.Sprintf("CAIRN_LEASE_MS=%d", leaseMs))
	w := &exampleWorker{cmd: cmd, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = w, w
	require.NoError(t, cmd.Start())
	go func() { _ = cmd.Wait(); close(w.exited) }()
	t.Cleanup(func() {
		select {
		case <-w.exited:
		default:
			w.kill()
		}
	})
	return w
}

// TestExampleRemoteWorkers runs examples/remote-workers on the real binary with --auth: the
// Python and the Node worker each serve shipping.quote with a worker token; workflows of the
// example document finish with the prices they computed, or with the refusal a try caught. One
// worker is killed (SIGKILL) while it holds a task: the task is offered again once its lease runs
// out, to the next worker, and its workflow finishes.
func TestExampleRemoteWorkers(t *testing.T) {
	t.Parallel()
	dir, err := filepath.Abs("../../examples/remote-workers")
	require.NoError(t, err)
	for _, lang := range []struct{ name, interpreter, script string }{
		{"python", "python3", "worker.py"},
		{"node", "node", "worker.mjs"},
	} {
		t.Run(lang.name, func(t *testing.T) {
			t.Parallel()
			if _, err := exec.LookPath(lang.interpreter); err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s is required under CI=true: %v", lang.interpreter, err)
				}
				t.Skipf("%s is not installed; skipping the %s worker example", lang.interpreter, lang.name)
			}
			for _, kind := range dbtest.Backends {
				t.Run(string(kind), func(t *testing.T) {
					t.Parallel()
					runRemoteExample(t, dbtest.URL(t, kind), dir, lang.interpreter, filepath.Join(dir, lang.script))
				})
			}
		})
	}
}

func runRemoteExample(t *testing.T, dbURL, dir, interpreter, script string) {
	r := runCairn(t, "", nil, "migrate", "up", "--database", dbURL)
	require.Zero(t, r.code, r.stderr)
	r = runCairn(t, "", nil, "token", "create", "--database", dbURL, "--name", "ops")
	require.Zero(t, r.code, r.stderr)
	admin := strings.TrimSpace(r.stdout)
	r = runCairn(t, "", nil, "token", "create", "--database", dbURL, "--name", "workers", "--role", "worker", "--functions", "shipping.quote")
	require.Zero(t, r.code, r.stderr)
	workerToken := strings.TrimSpace(r.stdout)
	r = runCairn(t, "", nil, "token", "create", "--database", dbURL, "--name", "bad", "--role", "worker")
	requireOneLineError(t, r, "--functions")

	n := startNode(t, nil, "--database", dbURL, "--auth", "--definitions", dir, "--addr", "127.0.0.1:0", "--log-format", "json",
		"--poll-interval", "200ms")
	endpoint := "http://" + n.addr + "/graphql"

	start := func(input string) string {
		var out struct {
			StartWorkflow struct{ Workflow struct{ ID string } }
		}
		n.graphqlAs(t, admin, `mutation($in: JSON) { startWorkflow(input: {type: "examples.shipping-quote", input: $in}) { workflow { id } } }`,
			map[string]any{"in": json.RawMessage(input)}, &out)
		return out.StartWorkflow.Workflow.ID
	}
	type result struct {
		Status string
		Output map[string]any
	}
	wait := func(id string) result {
		deadline := time.Now().Add(60 * time.Second)
		for {
			var out struct{ Workflow result }
			n.graphqlAs(t, admin, `query($id: ID!) { workflow(id: $id) { status output } }`, map[string]any{"id": id}, &out)
			if out.Workflow.Status == "FINISHED" || out.Workflow.Status == "FAILED" || out.Workflow.Status == "MANUAL" {
				return out.Workflow
			}
			if time.Now().After(deadline) {
				t.Fatalf("workflow %s is still %s; node log:\n%s", id, out.Workflow.Status, n.output())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// A worker takes a slow task and is killed while it holds it.
	slow := start(`{"weightKg": 1, "country": "FI", "sleepOnFirstAttemptMs": 60000}`)
	doomed := startExampleWorker(t, interpreter, script, endpoint, workerToken, "doomed", 1500)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var out struct {
			RemoteWorkers []struct {
				Name      string
				TasksHeld int
			}
		}
		n.graphqlAs(t, admin, `{ remoteWorkers { name tasksHeld } }`, nil, &out)
		if len(out.RemoteWorkers) == 1 && out.RemoteWorkers[0].TasksHeld == 1 {
			require.Equal(t, "doomed", out.RemoteWorkers[0].Name)
			break
		}
		require.True(t, time.Now().Before(deadline), "the worker never took the task; its output:\n%s", doomed)
		time.Sleep(50 * time.Millisecond)
	}
	doomed.kill()

	w := startExampleWorker(t, interpreter, script, endpoint, workerToken, "survivor", 30000)
	ids := map[string]string{
		start(`{"weightKg": 2, "country": "DE"}`):  "DE",
		start(`{"weightKg": 3, "country": "US"}`):  "US",
		start(`{"weightKg": 1, "country": "XX"}`):  "XX",
		start(`{"weightKg": 10, "country": "FI"}`): "FI",
	}
	for id, country := range ids {
		got := wait(id)
		require.Equal(t, "FINISHED", got.Status, "worker output:\n%s", w)
		switch country {
		case "DE":
			require.Equal(t, map[string]any{"price": 9.0, "currency": "EUR", "servedBy": "survivor"}, got.Output)
		case "US":
			require.Equal(t, map[string]any{"price": 27.0, "currency": "USD", "servedBy": "survivor"}, got.Output)
		case "FI":
			require.Equal(t, map[string]any{"price": 60.0, "currency": "EUR", "servedBy": "survivor"}, got.Output)
		case "XX":
			require.Equal(t, map[string]any{"refused": `no rate for country 'XX'`}, normalizeRefusal(got.Output))
		}
	}
	got := wait(slow)
	require.Equal(t, "FINISHED", got.Status)
	require.Equal(t, map[string]any{"price": 6.0, "currency": "EUR", "servedBy": "survivor"}, got.Output,
		"the killed worker's task went to the next worker once its lease ran out")

	var tis struct {
		Workflow struct {
			TaskInstances struct {
				Nodes []struct {
					Status  string
					Attempt int
				}
			}
		}
	}
	n.graphqlAs(t, admin, `query($id: ID!) { workflow(id: $id) { taskInstances(first: 20) { nodes { status attempt } } } }`, map[string]any{"id": slow}, &tis)
	nodes := tis.Workflow.TaskInstances.Nodes
	require.NotEmpty(t, nodes)
	var remote []int
	for _, ti := range nodes {
		if ti.Status == "SUCCEEDED" && ti.Attempt > 1 {
			remote = append(remote, ti.Attempt)
		}
	}
	require.Equal(t, []int{2}, remote, "the quote succeeded on its second attempt: %+v", nodes)
}

// normalizeRefusal makes Python's and JavaScript's quoting of the refused country alike.
func normalizeRefusal(out map[string]any) map[string]any {
	if s, ok := out["refused"].(string); ok {
		out["refused"] = strings.ReplaceAll(s, `"`, `'`)
	}
	return out
}
