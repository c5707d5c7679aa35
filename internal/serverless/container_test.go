//go:build linux

package serverless_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// containerNode is a node that allows run: container through podman, within opts' limits.
func containerNode(t *testing.T, store *persistence.Store, opts serverless.RunOptions) (*node, string) {
	t.Helper()
	cli := serverless.ContainerCLI(t)
	opts.Allow, opts.ContainerCLI = []string{"container"}, cli
	n := newNodeWith(t, store, serverless.Options{Run: opts, Secrets: map[string]any{"token": "s3cr3t-t0ken"}})
	n.startWorker(t)
	return n, cli
}

// A container runs its command through /bin/sh -c with the arguments as $1, $2, the task's stdin
// and environment (none of the node's), or the image's own command with the arguments; its output
// is what return says, as for a process; a volume maps a host directory. A name given is the container's, kept after (cleanup
// never, the default); cleanup always removes it.
func TestRunContainer(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n, cli := containerNode(t, store, serverless.RunOptions{})
		dir := t.TempDir()
		serverless.RemoveContainer(cli, "cairn-test-env-run-container-"+string(store.Kind()))
		t.Cleanup(func() { serverless.RemoveContainer(cli, "cairn-test-env-run-container-"+string(store.Kind())) })
		def := n.deploy(t, `document: {dsl: '1.0.3', namespace: test, name: run-container-`+string(store.Kind())+`, version: '0.1.0'}
do:
  - setInput:
      set:
        message: Hello World
  - runContainer:
      input:
        from: ${ .message }
      run:
        container:
          image: `+serverless.TestImage+`
          command: |
            input=$(cat)
            echo "STDIN was: $input"
            echo "ARGS are $1 $2"
          stdin: ${ . }
          arguments:
          - Foo
          - Bar
          lifetime: {cleanup: always}
      output: {as: '${ {stdin: .} }'}
  - imageCommand:
      run:
        container:
          image: `+serverless.TestImage+`
          arguments: [echo, from the image's command]
          lifetime: {cleanup: always}
      output: {as: '${ $input + {image: .} }'}
  - env:
      run:
        container:
          image: `+serverless.TestImage+`
          name: '${ "cairn-test-env-" + $workflow.definition.document.name }'
          command: 'printf "%s;" "$TOKEN" "$SPACED"; env'
          environment: {TOKEN: '${ $secret.token }', SPACED: ' a = b '}
      output: {as: '${ $input + {env: .} }'}
  - all:
      run:
        container:
          image: `+serverless.TestImage+`
          command: 'echo out; echo err >&2; exit 3'
          lifetime: {cleanup: always}
        return: all
      output: {as: '${ $input + {all: .} }'}
  - none:
      run:
        container: {image: `+serverless.TestImage+`, command: 'echo ignored', lifetime: {cleanup: always}}
        return: none
  - volume:
      run:
        container:
          image: `+serverless.TestImage+`
          command: 'tr a-z A-Z < /data/in > /data/out'
          volumes: {`+dir+`: /data}
          lifetime: {cleanup: always}
        return: none
`)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "in"), []byte("through a volume"), 0o644))
		w := n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		out := output(t, w).(map[string]any)
		env := out["env"].(string)
		delete(out, "env")
		require.Equal(t, map[string]any{
			"stdin": "STDIN was: Hello World\nARGS are Foo Bar\n",
			"image": "from the image's command\n",
			"all":   map[string]any{"code": float64(3), "stdout": "out\n", "stderr": "err\n"},
		}, out)
		require.True(t, strings.HasPrefix(env, "[secret]; a = b ;"), env)
		require.NotContains(t, string(w.Variables), "s3cr3t-t0ken")
		require.NotContains(t, env, leakName, "the node's environment stays out of the container")
		name := "cairn-test-env-run-container-" + string(store.Kind())
		require.Equal(t, "exited", serverless.ContainerState(t, cli, name), "cleanup never keeps the named container")
		got, err := os.ReadFile(filepath.Join(dir, "out"))
		require.NoError(t, err)
		require.Equal(t, "THROUGH A VOLUME", string(got))
	})
}

// A container past the node's run timeout is stopped (removed with cleanup: always, killed and
// kept otherwise) and the task faults with a timeout; one that writes past the output limit is
// stopped and faults; an exit code other than zero faults as a process's does. The timeout leaves
// a loaded machine's container runtime time to start the container (a run cut before its
// container started leaves it "created", not "exited") and the endless writer time to write past
// the limit; the sleeper's 60 s are far beyond it.
func TestRunContainerLimits(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		const timeout = 8 * time.Second
		n, cli := containerNode(t, store, serverless.RunOptions{Timeout: timeout, MaxOutputBytes: 1000})
		kind := string(store.Kind())
		for _, c := range []struct{ cleanup, state string }{{"always", ""}, {"never", "exited"}} {
			name := "cairn-test-sleep-" + c.cleanup + "-" + kind
			serverless.RemoveContainer(cli, name)
			t.Cleanup(func() { serverless.RemoveContainer(cli, name) })
			def := n.deploy(t, `document: {dsl: '1.0.3', namespace: test, name: sleep-`+c.cleanup+`, version: '0.1.0'}
do:
  - sleep:
      run:
        container: {image: `+serverless.TestImage+`, name: `+name+`, command: 'sleep 60', lifetime: {cleanup: `+c.cleanup+`}}
`)
			began := time.Now()
			w := n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
			require.Less(t, time.Since(began), timeout+30*time.Second, "cut at the timeout, not when the sleep ends")
			require.Equal(t, persistence.StatusFailed, w.Status)
			p := serverless.ProblemOf(w)
			require.NotNil(t, p, lastError(w))
			require.Equal(t, "https://serverlessworkflow.io/spec/1.0.0/errors/timeout", p.Type)
			require.Equal(t, "Process Timeout", p.Title)
			require.Eventually(t, func() bool { return serverless.ContainerState(t, cli, name) == c.state }, 10*time.Second, 100*time.Millisecond,
				"cleanup %s: the container is %q", c.cleanup, serverless.ContainerState(t, cli, name))
		}

		def := n.deploy(t, `document: {dsl: '1.0.3', namespace: test, name: chatty, version: '0.1.0'}
do:
  - endless:
      run:
        container: {image: `+serverless.TestImage+`, command: 'yes', lifetime: {cleanup: always}}
`)
		w := n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
		require.Equal(t, persistence.StatusFailed, w.Status)
		p := serverless.ProblemOf(w)
		require.NotNil(t, p, lastError(w))
		require.Equal(t, "Process Output Too Large", p.Title)

		def = n.deploy(t, `document: {dsl: '1.0.3', namespace: test, name: exits, version: '0.1.0'}
do:
  - fails:
      run:
        container: {image: `+serverless.TestImage+`, command: 'echo "no such order" >&2; exit 4', lifetime: {cleanup: always}}
`)
		w = n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
		require.Equal(t, persistence.StatusFailed, w.Status)
		p = serverless.ProblemOf(w)
		require.NotNil(t, p, lastError(w))
		require.Equal(t, "Process Failed", p.Title)
		require.Equal(t, "the process exited with code 4: no such order", p.Detail)
	})
}

// When the runtime's CLI cannot run the container (an image that is not there, with pullPolicy
// never; a name already in use) the task faults with a runtime error naming the CLI's complaint,
// even when return asks for the exit code. cleanup: eventually removes the container after its
// time.
func TestRunContainerNotStarted(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n, cli := containerNode(t, store, serverless.RunOptions{})
		def := n.deploy(t, `document: {dsl: '1.0.3', namespace: test, name: absent, version: '0.1.0'}
do:
  - guarded:
      try:
        - run:
            run:
              container: {image: 'localhost/cairn-absent:1', pullPolicy: never}
              return: code
      catch:
        errors: {with: {type: 'https://serverlessworkflow.io/spec/1.0.0/errors/runtime', status: 500}}
        as: problem
        do:
          - note: {set: {caught: '${ $problem.title }', detail: '${ $problem.detail }'}}
`)
		w := n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		out := output(t, w).(map[string]any)
		require.Equal(t, "Container Not Started", out["caught"])
		require.Contains(t, out["detail"], "podman could not run the container (exit code 125)")
		require.Contains(t, out["detail"], "cairn-absent")

		name := "cairn-test-eventually-" + string(store.Kind())
		serverless.RemoveContainer(cli, name)
		t.Cleanup(func() { serverless.RemoveContainer(cli, name) })
		def = n.deploy(t, `document: {dsl: '1.0.3', namespace: test, name: eventually, version: '0.1.0'}
do:
  - first:
      run:
        container: {image: `+serverless.TestImage+`, name: `+name+`, command: 'echo kept', lifetime: {cleanup: eventually, after: {seconds: 2}}}
  - again:
      run:
        container: {image: `+serverless.TestImage+`, name: `+name+`, command: 'true'}
`)
		w = n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
		require.Equal(t, persistence.StatusFailed, w.Status)
		p := serverless.ProblemOf(w)
		require.NotNil(t, p, lastError(w))
		require.Equal(t, "/do/1/again", p.Instance, "the name is still in use")
		require.Equal(t, "Container Not Started", p.Title)
		require.Equal(t, "exited", serverless.ContainerState(t, cli, name))
		require.Eventually(t, func() bool { return serverless.ContainerState(t, cli, name) == "" }, 10*time.Second, 100*time.Millisecond,
			"the container is removed after its time")
	})
}

// run: container is refused at deploy on a node that does not allow it or has no runtime CLI,
// and so is what cannot run: a pullPolicy, cleanup or mapping the spec does not have, a name no
// container may have.
func TestRunContainerRefusedAtDeploy(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		cli := serverless.ContainerCLI(t)
		none := newNodeWith(t, store, serverless.Options{Run: serverless.RunOptions{Allow: []string{"shell"}}})
		noCLI := newNodeWith(t, store, serverless.Options{Run: serverless.RunOptions{Allow: []string{"container"}, ContainerCLI: "cairn-no-such-cli"}})
		ok := newNodeWith(t, store, serverless.Options{Run: serverless.RunOptions{Allow: []string{"container"}, ContainerCLI: cli}})
		box := func(body string) string { return "do:\n  - box: {run: {container: {image: alpine" + body + "}}}\n" }
		for _, tc := range []struct {
			n                *node
			doc, field, says string
		}{
			{none, box(""), "/do/0/box/run/container", "this node does not allow run: container (start it with --allow-run container)"},
			{noCLI, box(""), "/do/0/box/run/container", `this node has no container runtime CLI "cairn-no-such-cli"`},
			{ok, "do:\n  - box: {run: {container: {command: 'true'}}}\n", "/do/0/box/run/container/image", "needs its image"},
			{ok, box(", pullPolicy: sometimes"), "/do/0/box/run/container/pullPolicy", "ifNotPresent, always or never"},
			{ok, box(", lifetime: {cleanup: later}"), "/do/0/box/run/container/lifetime/cleanup", "always, never or eventually"},
			{ok, box(", lifetime: {cleanup: eventually}"), "/do/0/box/run/container/lifetime/after", "needs after"},
			{ok, box(", ports: {'8080': 'eighty'}"), "/do/0/box/run/container/ports/8080", "not a port mapping"},
			{ok, box(", volumes: {'/srv': '/in:rw,z'}"), "/do/0/box/run/container/volumes/~1srv", "not a volume mapping"},
			{ok, box(", name: 'no spaces'"), "/do/0/box/run/container/name", "a container's name"},
			{ok, box(", environment: {'A B': x}"), "/do/0/box/run/container/environment/A B", "no blanks"},
			{ok, box(", entrypoint: sh"), "/do/0/box/run/container/entrypoint", "unknown key"},
			{ok, "do:\n  - box: {run: {container: {image: alpine}, shell: {command: 'true'}}}\n", "/do/0/box/run", "exactly one of"},
		} {
			_, err := tc.n.engine.Deploy(context.Background(), header+tc.doc, "")
			var we *workflow.Error
			require.ErrorAs(t, err, &we, "%s: %v", tc.doc, err)
			require.Equal(t, workflow.CodeInvalidInput, we.Code, "%v", err)
			require.Equal(t, tc.field, we.Field, "%v", err)
			require.Contains(t, we.Message, tc.says)
		}
	})
}

// Cancelling a workflow kills the container its task runs.
func TestRunContainerCancel(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n, cli := containerNode(t, store, serverless.RunOptions{})
		name := "cairn-test-cancel-" + string(store.Kind())
		serverless.RemoveContainer(cli, name)
		t.Cleanup(func() { serverless.RemoveContainer(cli, name) })
		def := n.deploy(t, `document: {dsl: '1.0.3', namespace: test, name: long, version: '0.1.0'}
do:
  - sleep:
      run:
        container: {image: `+serverless.TestImage+`, name: `+name+`, command: 'sleep 60'}
`)
		w := n.start(t, def.Type, `{}`)
		require.Eventually(t, func() bool { return serverless.ContainerState(t, cli, name) == "running" }, 30*time.Second, 50*time.Millisecond)
		_, err := n.engine.Cancel(context.Background(), workflow.ChangeParams{ID: w.ID, Reason: "test"})
		require.NoError(t, err)
		require.Eventually(t, func() bool { return serverless.ContainerState(t, cli, name) == "exited" }, 10*time.Second, 50*time.Millisecond,
			"the container was killed: %s", serverless.ContainerState(t, cli, name))
		got, err := store.WorkflowGet(context.Background(), w.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusCancelled, got.Status)
	})
}

// ports publishes a container's port on the host: what the test sends to the host's port is what
// the container reads.
func TestRunContainerPorts(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n, _ := containerNode(t, store, serverless.RunOptions{Timeout: 30 * time.Second})
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		require.NoError(t, l.Close())
		def := n.deploy(t, `document: {dsl: '1.0.3', namespace: test, name: ports, version: '0.1.0'}
do:
  - listen:
      run:
        container:
          image: `+serverless.TestImage+`
          command: 'nc -l -p 8080'
          ports: {'`+addr+`': 8080}
          lifetime: {cleanup: always}
`)
		w := n.start(t, def.Type, `{}`)
		var ended *persistence.Workflow
		require.Eventually(t, func() bool {
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				_, _ = c.Write([]byte("hello through a port\n"))
				_ = c.Close()
			}
			time.Sleep(300 * time.Millisecond)
			got, err := store.WorkflowGet(context.Background(), w.ID)
			if err == nil && got.Status.Terminal() {
				ended = got
			}
			return ended != nil
		}, 30*time.Second, 100*time.Millisecond)
		require.Equal(t, persistence.StatusFinished, ended.Status, lastError(ended))
		require.Equal(t, "hello through a port\n", output(t, ended))
	})
}
