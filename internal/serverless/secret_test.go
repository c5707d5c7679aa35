package serverless_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// The secrets of these tests: characters a URL or JSON escapes, so every form is looked for.
var testSecrets = map[string]any{"api": map[string]any{
	"key":      "k3y-ALPHA+/=",
	"token":    "t0k&en=GAMMA ?",
	"password": `p@ss "word"/BETA`,
	"path":     "p4th-DELTA",
}}

// secretTexts are the forms a test secret could be stored in.
func secretTexts() []string {
	var out []string
	for _, v := range testSecrets["api"].(map[string]any) {
		s := v.(string)
		js, _ := json.Marshal(s)
		out = append(out, s, url.QueryEscape(s), url.PathEscape(s), string(js[1:len(js)-1]), base64.StdEncoding.EncodeToString([]byte(s)))
	}
	return out
}

// requireNoSecretStored reads back everything stored of a workflow that readers see: its
// variables, lastError and state text, its history (actions and the variables they set), task
// instances and activity logs; no form of a secret is there.
func requireNoSecretStored(t *testing.T, store *persistence.Store, w *persistence.Workflow) {
	t.Helper()
	ctx := context.Background()
	stored := []string{string(w.Variables), lastError(w)}
	if w.StateText != nil {
		stored = append(stored, *w.StateText)
	}
	as, err := store.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: []int64{w.ID}})
	require.NoError(t, err)
	for _, a := range as {
		if a.StateText != nil {
			stored = append(stored, *a.StateText)
		}
		vs, err := store.ActionVariableList(ctx, []int64{a.ID})
		require.NoError(t, err)
		for _, v := range vs {
			stored = append(stored, string(v.Value))
		}
	}
	tis, err := store.TaskInstanceList(ctx, persistence.TaskInstanceListParams{WorkflowIDs: []int64{w.ID}})
	require.NoError(t, err)
	for _, ti := range tis {
		stored = append(stored, string(ti.Output))
		if ti.Error != nil {
			stored = append(stored, *ti.Error)
		}
	}
	logs, err := store.ActivityLogList(ctx, persistence.ActivityLogListParams{WorkflowIDs: []int64{w.ID}})
	require.NoError(t, err)
	for _, l := range logs {
		stored = append(stored, l.Value)
	}
	all := strings.Join(stored, "\n")
	for _, s := range secretTexts() {
		require.NotContains(t, all, s)
	}
}

// echo answers a call with what it got, once it checked every secret arrived whole.
func echo(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	api := testSecrets["api"].(map[string]any)
	var sent map[string]any
	_ = json.Unmarshal(body, &sent)
	if r.Header.Get("X-Api-Key") != api["key"] || r.URL.Query().Get("token") != api["token"] ||
		sent["password"] != api["password"] || !strings.HasSuffix(r.URL.Path, "/"+api["path"].(string)) {
		http.Error(w, "unauthorized: "+r.URL.String()+" "+r.Header.Get("X-Api-Key")+" "+string(body), http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"uri": r.URL.String(), "key": r.Header.Get("X-Api-Key"), "body": sent})
}

// TestSecretsStayOutOfEverythingStored: secrets in a call's endpoint, header, query and body
// reach the endpoint whole, yet no form of them is stored: not the response's request (URI and
// headers), not its content when the endpoint echoes them, not a value a set task copied, not an
// emitted event's log, not the Problem of a call that fails.
func TestSecretsStayOutOfEverythingStored(t *testing.T) {
	t.Parallel()
	server := httptest.NewServer(http.HandlerFunc(echo))
	t.Cleanup(server.Close)
	free, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedURL := "http://" + free.Addr().String()
	require.NoError(t, free.Close())

	call := func(base string) string {
		return fmt.Sprintf(`
      call: http
      with:
        method: post
        endpoint: '${ "%s/echo/" + $secret.api.path }'
        headers: {X-Api-Key: '${ $secret.api.key }'}
        query: {token: '${ $secret.api.token }'}
        body: {password: '${ $secret.api.password }'}
        output: response`, base)
	}
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNodeWith(t, store, serverless.Options{Secrets: testSecrets, HTTP: serverless.HTTPOptions{Allow: []string{"127.0.0.1"}}})
		n.startWorker(t)

		def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: t, name: echoed, version: '1.0.0'}
do:
  - copy:
      set: {copied: '${ $secret.api.key }', token: '${ $secret.api.token }'}
      export: {as: '${ {held: $secret.api.password} }'}
  - tell:
      emit: {event: {with: {type: t.told, data: {key: '${ $secret.api.key }'}}}}
  - call:`+call(server.URL))
		w := n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		requireNoSecretStored(t, store, w)
		out, _ := output(t, w).(map[string]any)
		request, _ := out["request"].(map[string]any)
		require.Equal(t, "[secret]", request["headers"].(map[string]any)["X-Api-Key"], out)
		require.Contains(t, request["uri"], "/echo/[secret]?token=[secret]", out)
		require.Equal(t, map[string]any{"uri": "/echo/[secret]?token=[secret]", "key": "[secret]", "body": map[string]any{"password": "[secret]"}}, out["content"])

		// A raw output is the body in base64: the secrets it echoes are hidden before encoding.
		def = n.deploy(t, `
document: {dsl: '1.0.0', namespace: t, name: echoedraw, version: '1.0.0'}
do:
  - call:`+strings.Replace(call(server.URL), "output: response", "output: raw", 1))
		w = n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		requireNoSecretStored(t, store, w)
		encoded, _ := output(t, w).(string)
		body, err := base64.StdEncoding.DecodeString(encoded)
		require.NoError(t, err)
		require.JSONEq(t, `{"uri": "/echo/[secret]?token=[secret]", "key": "[secret]", "body": {"password": "[secret]"}}`, string(body))

		// The endpoint refuses the call (its answer echoes what it got), or cannot be reached:
		// the Problem in lastError names no secret either.
		for name, base := range map[string]string{"refused": server.URL + "/wrong", "unreachable": closedURL} {
			def := n.deploy(t, fmt.Sprintf(`
document: {dsl: '1.0.0', namespace: t, name: %s, version: '1.0.0'}
do:
  - call:`, name)+strings.Replace(call(base), "X-Api-Key: ", "X-Api-Key: '${ \"wrong\" }', X-Other: ", 1))
			w := n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
			require.Equal(t, persistence.StatusFailed, w.Status)
			requireNoSecretStored(t, store, w)
			p := serverless.ProblemOf(w)
			require.NotNil(t, p, lastError(w))
			require.Contains(t, p.Detail, "[secret]", "the detail still says where the call went")
		}

		// A try that catches the refused call: its attempt is a FAILED task instance whose
		// Problem names no secret either.
		def = n.deploy(t, `
document: {dsl: '1.0.0', namespace: t, name: caught, version: '1.0.0'}
do:
  - guarded:
      try:
        - call:`+strings.ReplaceAll(strings.Replace(call(server.URL+"/wrong"), "X-Api-Key: ", "X-Api-Key: '${ \"wrong\" }', X-Other: ", 1), "\n      ", "\n            ")+`
      catch:
        errors: {with: {status: 401}}`)
		w = n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		requireNoSecretStored(t, store, w)
	})
}

// TestSecretsStayOutOfChildrenAndRemoteTasks: the input of a child workflow (run: workflow, a
// fork's branch) and the arguments of a remote task are stored with them, so a secret put there
// is stored as [secret]; a remote worker keeps its own credentials.
func TestSecretsStayOutOfChildrenAndRemoteTasks(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		n := newNodeWith(t, store, serverless.Options{Secrets: testSecrets})
		n.startWorker(t)
		n.deploy(t, `
document: {dsl: '1.0.0', namespace: lib, name: keep, version: '1.0.0'}
do:
  - keep: {set: {kept: '${ .key }'}}
`)
		def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: app, name: hands, version: '1.0.0'}
do:
  - child:
      run:
        workflow: {namespace: lib, name: keep, version: '1.0.0', input: {key: '${ $secret.api.key }'}}
  - fan:
      input: {from: '${ {token: $secret.api.token} }'}
      fork:
        branches:
          - one: {set: {got: '${ .token }'}}
  - remote:
      call: quote
      with: {password: '${ $secret.api.password }'}
`)
		w := n.start(t, def.Type, `{}`)
		var task workflow.LeasedTask
		for task.RemoteTask == nil {
			got, err := n.engine.PollTasks(ctx, workflow.PollTasksParams{Functions: []string{"quote"}, WaitMs: ptr(2000), Worker: "py"})
			require.NoError(t, err)
			if len(got) == 1 {
				task = got[0]
			}
		}
		require.JSONEq(t, `{"password": "[secret]"}`, string(task.Input))
		_, err := n.engine.CompleteTask(ctx, task.Token, json.RawMessage(`{"total": 30}`), nil)
		require.NoError(t, err)
		done := n.waitEnded(t, w.ID)
		require.Equal(t, persistence.StatusFinished, done.Status, lastError(done))
		requireNoSecretStored(t, store, done)

		children := childrenOf(t, store, w.ID)
		require.Len(t, children, 2, "the run: workflow child and the fork's branch")
		for _, c := range children {
			require.Contains(t, string(c.Input), "[secret]")
			for _, s := range secretTexts() {
				require.NotContains(t, string(c.Input), s)
			}
			requireNoSecretStored(t, store, c)
		}
	})
}

// TestSecretsReadByConcurrentSteps: many workflows read $secret at once on one node. The
// expression engine rewrites the maps it is given; were they the node's one map of secrets, the
// steps would write it concurrently (a race, and at worst a crash of the node).
func TestSecretsReadByConcurrentSteps(t *testing.T) {
	t.Parallel()
	n := newNodeWith(t, dbtest.Open(t, persistence.KindSQLite), serverless.Options{
		Secrets: map[string]any{"api": map[string]any{"key": "k3y-OMEGA", "retries": 3, "hosts": []any{"host-a", "host-b"}}}})
	n.startWorker(t)
	def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: t, name: reads, version: '1.0.0'}
do:
  - one: {set: {tries: '${ $secret.api.retries }'}}
  - two: {set: {tries: '${ .tries + $secret.api.retries }', hosts: '${ $secret.api.hosts | length }'}}
  - three: {set: {tries: '${ .tries + $secret.api.retries }', hosts: '${ .hosts }', key: '${ $secret.api.key | length }'}}
`)
	var ids []int64
	for range 20 {
		ids = append(ids, n.start(t, def.Type, `{}`).ID)
	}
	for _, id := range ids {
		w := n.waitEnded(t, id)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.Equal(t, map[string]any{"tries": float64(9), "hosts": float64(2), "key": float64(9)}, output(t, w))
	}
}
