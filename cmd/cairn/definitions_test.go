package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence/dbtest"
)

// graphqlErrors posts a query and returns its data and errors, for requests meant to be refused.
func (n *node) graphqlErrors(t *testing.T, query string, variables map[string]any) (json.RawMessage, []map[string]any) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": query, "variables": variables})
	require.NoError(t, err)
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Post("http://"+n.addr+"/graphql", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var envelope struct {
		Data   json.RawMessage  `json:"data"`
		Errors []map[string]any `json:"errors"`
	}
	require.NoError(t, json.Unmarshal(raw, &envelope), string(raw))
	return envelope.Data, envelope.Errors
}

const deployMutation = `mutation($source: String!) { deployDefinition(input: {source: $source}) { created definition { type version label source states { name kind next } } } }`

// TestServeRunsDeployedDefinitions: serve --definitions loads examples/, deployDefinition deploys
// through GraphQL (refusing a document at fault with the JSON pointer of the fault), a workflow of
// a deployed type runs on the node and shows its output, and `cairn definitions apply` deploys
// from the command line.
func TestServeRunsDeployedDefinitions(t *testing.T) {
	t.Parallel()
	examples, err := filepath.Abs("../../examples")
	require.NoError(t, err)
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			url := dbtest.URL(t, kind)
			n := startNode(t, nil, "--database", url, "--definitions", examples, "--addr", "127.0.0.1:0", "--log-format", "json")

			_, errs := n.graphqlErrors(t, deployMutation, map[string]any{"source": "document: {dsl: '1.0.0', namespace: t, name: bad, version: '1.0.0'}\n" +
				"do:\n  - ok: {set: {x: 1}}\n  - fetch: {call: grpc, with: {proto: {endpoint: 'ftp://x.proto'}, service: {name: S, host: h}, method: m}}\n"})
			require.Len(t, errs, 1)
			ext, _ := errs[0]["extensions"].(map[string]any)
			require.Equal(t, "INVALID_INPUT", ext["code"], errs)
			require.Equal(t, "/do/1/fetch/with/proto/endpoint", ext["field"], errs)

			doc := "document: {dsl: '1.0.0', namespace: t, name: hello, version: '2.0.0'}\ndo:\n  - greet: {set: {greeting: '${ \"hello \" + .name }'}}\n"
			var deployed struct {
				DeployDefinition struct {
					Created    bool
					Definition struct {
						Type, Label, Source string
						Version             int
						States              []struct {
							Name, Kind string
							Next       []string
						}
					}
				}
			}
			n.graphql(t, deployMutation, map[string]any{"source": doc}, &deployed)
			require.True(t, deployed.DeployDefinition.Created)
			def := deployed.DeployDefinition.Definition
			require.Equal(t, "t.hello", def.Type)
			require.Equal(t, "2.0.0", def.Label)
			require.Equal(t, doc, def.Source)
			require.Equal(t, "start", def.States[0].Name)
			require.Equal(t, []string{"/do/0/greet", "end"}, def.States[0].Next)
			require.Equal(t, "/do/0/greet", def.States[1].Name)
			n.graphql(t, deployMutation, map[string]any{"source": doc}, &deployed)
			require.False(t, deployed.DeployDefinition.Created, "an unchanged document makes no new version")

			run := func(typ string, input map[string]any) map[string]any {
				var started struct {
					StartWorkflow struct{ Workflow struct{ ID string } }
				}
				n.graphql(t, `mutation($input: StartWorkflowInput!) { startWorkflow(input: $input) { workflow { id } } }`,
					map[string]any{"input": map[string]any{"type": typ, "input": input}}, &started)
				var got struct {
					Workflow struct {
						Status string
						Output map[string]any
					}
				}
				deadline := time.Now().Add(time.Minute)
				for got.Workflow.Status != "FINISHED" {
					require.True(t, time.Now().Before(deadline), "workflow not finished: %+v", got.Workflow)
					time.Sleep(50 * time.Millisecond)
					n.graphql(t, `query($id: ID!) { workflow(id: $id) { status output } }`, map[string]any{"id": started.StartWorkflow.Workflow.ID}, &got)
				}
				return got.Workflow.Output
			}
			require.Equal(t, map[string]any{"greeting": "hello ada"}, run("t.hello", map[string]any{"name": "ada"}))
			require.Equal(t, map[string]any{"order": "o-1", "status": "approved", "approvedBy": "policy"},
				run("examples.order-approval", map[string]any{"order": map[string]any{"id": "o-1", "total": 5}}), "a document of --definitions runs")

			// A large order waits for its approval event; publishEvent delivers it.
			var large struct {
				StartWorkflow struct{ Workflow struct{ ID string } }
			}
			n.graphql(t, `mutation($input: StartWorkflowInput!) { startWorkflow(input: $input) { workflow { id } } }`,
				map[string]any{"input": map[string]any{"type": "examples.order-approval", "input": map[string]any{"order": map[string]any{"id": "o-2", "total": 5000}}}}, &large)
			var state struct{ Workflow struct{ Status string } }
			waitFor(t, time.Minute, "the order waiting for approval", func() bool {
				n.graphql(t, `query($id: ID!) { workflow(id: $id) { status } }`, map[string]any{"id": large.StartWorkflow.Workflow.ID}, &state)
				return state.Workflow.Status == "WAITING"
			})
			var published struct {
				PublishEvent struct{ Delivered []struct{ ID string } }
			}
			n.graphql(t, `mutation($event: JSON!) { publishEvent(input: {event: $event}) { delivered { id } } }`, map[string]any{"event": map[string]any{
				"specversion": "1.0", "id": "approval-1", "source": "test", "type": "com.example.order.approved", "data": map[string]any{"by": "eve"}}}, &published)
			require.Len(t, published.PublishEvent.Delivered, 1)
			require.Equal(t, large.StartWorkflow.Workflow.ID, published.PublishEvent.Delivered[0].ID)
			var done struct {
				Workflow struct {
					Status string
					Output map[string]any
				}
			}
			waitFor(t, time.Minute, "the approved order finished", func() bool {
				n.graphql(t, `query($id: ID!) { workflow(id: $id) { status output } }`, map[string]any{"id": large.StartWorkflow.Workflow.ID}, &done)
				return done.Workflow.Status == "FINISHED"
			})
			require.Equal(t, map[string]any{"order": "o-2", "status": "approved", "approvedBy": "eve"}, done.Workflow.Output)

			r := runCairn(t, "", []string{"CAIRN_DATABASE_URL=" + url}, "definitions", "apply", filepath.Join(examples, "retry-recovery.yaml"))
			require.Zero(t, r.code, r.stderr)
			require.Contains(t, r.stdout, "unchanged examples.retry-recovery version 1")
			require.Zero(t, n.stop(t), n.output())
		})
	}
}

// TestBenchRunsADeployedType: cairn bench --definition takes a type deployed with cairn
// definitions apply.
func TestBenchRunsADeployedType(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url := "sqlite://" + filepath.Join(dir, "bench.db")
	doc := filepath.Join(dir, "sw3.yaml")
	require.NoError(t, os.WriteFile(doc, []byte("document: {dsl: '1.0.0', namespace: bench, name: sw3, version: '1.0.0'}\ndo:\n"+
		"  - first: {set: {amount: 1}}\n  - route: {switch: [{small: {then: last}}]}\n  - last: {set: {done: true}}\n"), 0o600))
	env := []string{"CAIRN_DATABASE_URL=" + url}
	r := runCairn(t, dir, env, "migrate", "up")
	require.Zero(t, r.code, r.stderr)
	r = runCairn(t, dir, env, "definitions", "apply", doc)
	require.Zero(t, r.code, r.stderr)
	require.Contains(t, r.stdout, "deployed bench.sw3 version 1")
	r = runCairn(t, dir, env, "bench", "--definition", "bench.sw3", "--count", "50", "--json")
	require.Zero(t, r.code, r.stderr)
	var report struct {
		Definition string `json:"definition"`
		Steps      int    `json:"steps"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &report), r.stdout)
	require.Equal(t, "bench.sw3", report.Definition)
	require.Equal(t, 200, report.Steps, "50 workflows of 4 steps each (start and three tasks)")
}

// TestLoadSecrets reads $secret from a file and from CAIRN_SECRET_<NAME> variables, which win.
func TestLoadSecrets(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "secrets.yaml")
	require.NoError(t, os.WriteFile(file, []byte("api: {token: from-file}\nkey: from-file\n"), 0o600))
	got, err := loadSecrets(file, []string{"CAIRN_SECRET_key=from-env", "CAIRN_SECRET_=ignored", "OTHER=x"})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"api": map[string]any{"token": "from-file"}, "key": "from-env"}, got)
	_, err = loadSecrets(filepath.Join(t.TempDir(), "missing.yaml"), nil)
	require.Error(t, err)
}
