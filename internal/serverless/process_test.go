//go:build linux

package serverless_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// leakName is a variable of the node's environment that no process of a task may see.
const leakName, leakValue = "CAIRN_RUN_TEST_LEAK", "node-only-value"

func init() { _ = os.Setenv(leakName, leakValue) }

// processNode is a node that allows run: shell and run: script, within opts' limits.
func processNode(t *testing.T, store *persistence.Store, opts serverless.RunOptions) *node {
	t.Helper()
	opts.Allow = []string{"shell", "script"}
	n := newNodeWith(t, store, serverless.Options{Run: opts, Secrets: map[string]any{"token": "s3cr3t-t0ken"}})
	n.startWorker(t)
	return n
}

const shellDoc = `document: {dsl: '1.0.0', namespace: test, name: shell, version: '1.0.0'}
do:
  - greet:
      run:
        shell:
          command: 'printf "%s %s from %s" "$1" "$2" "$WHO"'
          arguments: [hello, '${ .name }']
          environment: {WHO: '${ .from }'}
      output: {as: '${ $input + {greet: .} }'}
  - named:
      run:
        shell:
          command: 'printf "%s|" "$@"'
          arguments: {b: '${ .name }', a: '1', flag: null}
      output: {as: '${ $input + {named: .} }'}
  - piped:
      run:
        shell: {command: 'tr a-z A-Z', stdin: '${ .name }'}
      output: {as: '${ $input + {piped: .} }'}
  - toStderr:
      run:
        shell: {command: 'echo out; echo err >&2'}
        return: stderr
      output: {as: '${ $input + {stderr: .} }'}
  - code:
      run:
        shell: {command: 'exit 3'}
        return: code
      output: {as: '${ $input + {code: .} }'}
  - all:
      run:
        shell: {command: 'echo out; echo err >&2; exit 2'}
        return: all
      output: {as: '${ $input + {all: .} }'}
  - none:
      run:
        shell: {command: 'echo ignored'}
        return: none
  - secret:
      run:
        shell: {command: 'printf "token %s" "$TOKEN"', environment: {TOKEN: '${ $secret.token }'}}
      output: {as: '${ $input + {secret: .} }'}
  - env:
      run:
        shell: {command: env}
      output: {as: '${ $input + {env: .} }'}
`

// A shell command gets its arguments as $1, $2 (a list as it is, a map as name=value by name),
// its environment and its stdin; its output is what return says: stdout (the default), stderr,
// the exit code (a non-zero one does not fault then), all three, or none (the task's input). It
// sees none of the node's environment but PATH.
func TestRunShell(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := processNode(t, store, serverless.RunOptions{})
		n.deploy(t, shellDoc)
		w := n.waitEnded(t, n.start(t, "test.shell", `{"name": "ada", "from": "cairn"}`).ID)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		out := output(t, w).(map[string]any)
		env := out["env"].(string)
		delete(out, "env")
		require.Equal(t, map[string]any{
			"name": "ada", "from": "cairn",
			"greet":  "hello ada from cairn",
			"named":  "a=1|b=ada|flag|",
			"piped":  "ADA",
			"stderr": "err\n",
			"code":   float64(3),
			"all":    map[string]any{"code": float64(2), "stdout": "out\n", "stderr": "err\n"},
			"secret": "token [secret]",
		}, out)
		require.NotContains(t, string(w.Variables), "s3cr3t-t0ken", "the process got the secret; its output stores none")
		require.Contains(t, env, "PATH="+os.Getenv("PATH")+"\n")
		require.NotContains(t, env, leakName)
		require.NotContains(t, env, leakValue)
		for _, line := range strings.Split(strings.TrimSpace(env), "\n") {
			name, _, _ := strings.Cut(line, "=")
			require.Contains(t, []string{"PATH", "PWD", "SHLVL", "_", "OLDPWD"}, name, "only PATH comes from the node; the shell sets the rest")
		}
	})
}

// A non-zero exit code faults the task with a runtime error naming the code and the end of
// stderr: a try catches it; uncaught, it fails the workflow.
func TestRunShellExitFaults(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := processNode(t, store, serverless.RunOptions{})
		n.deploy(t, `document: {dsl: '1.0.0', namespace: test, name: caught, version: '1.0.0'}
do:
  - guarded:
      try:
        - fails:
            run:
              shell: {command: 'echo "no such order" >&2; exit 4'}
      catch:
        errors: {with: {type: 'https://serverlessworkflow.io/spec/1.0.0/errors/runtime', status: 500}}
        as: problem
        do:
          - note: {set: {caught: '${ $problem.title }', detail: '${ $problem.detail }'}}
`)
		n.deploy(t, `document: {dsl: '1.0.0', namespace: test, name: uncaught, version: '1.0.0'}
do:
  - fails:
      run:
        shell: {command: 'exit 4'}
`)
		w := n.waitEnded(t, n.start(t, "test.caught", `{}`).ID)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.Equal(t, map[string]any{"caught": "Process Failed", "detail": "the process exited with code 4: no such order"}, output(t, w))

		w = n.waitEnded(t, n.start(t, "test.uncaught", `{}`).ID)
		require.Equal(t, persistence.StatusFailed, w.Status)
		p := serverless.ProblemOf(w)
		require.NotNil(t, p, lastError(w))
		require.Equal(t, "https://serverlessworkflow.io/spec/1.0.0/errors/runtime", p.Type)
		require.Equal(t, 500, p.Status)
		require.Equal(t, "/do/0/fails", p.Instance)
		require.Equal(t, "the process exited with code 4", p.Detail)
	})
}

// A process past the node's run timeout is killed with every process it started, and the task
// faults with a timeout; a task's own timeout bounds its process too, and a try may catch it.
func TestRunTimeoutKillsTheGroup(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := processNode(t, store, serverless.RunOptions{Timeout: time.Second})
		n.deploy(t, `document: {dsl: '1.0.0', namespace: test, name: sleeper, version: '1.0.0'}
do:
  - sleep:
      run:
        shell:
          command: 'sleep 60 & echo $! > "$1"; sleep 60'
          arguments: ['${ .pidFile }']
`)
		pidFile := filepath.Join(t.TempDir(), "child.pid")
		began := time.Now()
		w := n.waitEnded(t, n.start(t, "test.sleeper", `{"pidFile": "`+pidFile+`"}`).ID)
		took := time.Since(began)
		require.Equal(t, persistence.StatusFailed, w.Status)
		p := serverless.ProblemOf(w)
		require.NotNil(t, p, lastError(w))
		require.Equal(t, "https://serverlessworkflow.io/spec/1.0.0/errors/timeout", p.Type)
		require.Equal(t, 408, p.Status)
		require.Equal(t, "Process Timeout", p.Title)
		require.Less(t, took, 10*time.Second, "the process is killed at its timeout, not after its 60 s")
		raw, err := os.ReadFile(pidFile)
		require.NoError(t, err)
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		require.NoError(t, err)
		require.Eventually(t, func() bool { return !alive(pid) }, 5*time.Second, 50*time.Millisecond, "the background sleep %d was killed with its group", pid)

		n.deploy(t, `document: {dsl: '1.0.0', namespace: test, name: bounded, version: '1.0.0'}
do:
  - guarded:
      try:
        - sleep:
            timeout: {after: {milliseconds: 500}}
            run:
              shell: {command: 'sleep 60'}
      catch:
        errors: {with: {type: 'https://serverlessworkflow.io/spec/1.0.0/errors/timeout'}}
        as: problem
        do:
          - note: {set: {caught: '${ $problem.title }', instance: '${ $problem.instance }'}}
`)
		began = time.Now()
		w = n.waitEnded(t, n.start(t, "test.bounded", `{}`).ID)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.Equal(t, map[string]any{"caught": "Timeout", "instance": "/do/0/guarded/try/0/sleep"}, output(t, w))
		require.Less(t, time.Since(began), 10*time.Second)
	})
}

// alive reports whether a process runs (a zombie waiting to be reaped does not).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// A process that writes past the node's output limit is killed and the task faults.
func TestRunOutputLimit(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := processNode(t, store, serverless.RunOptions{MaxOutputBytes: 1000})
		n.deploy(t, `document: {dsl: '1.0.0', namespace: test, name: chatty, version: '1.0.0'}
do:
  - small:
      run:
        shell: {command: 'head -c 600 /dev/zero | tr "\0" a; head -c 400 /dev/zero | tr "\0" b >&2'}
      output: {as: '${ {small: length} }'}
  - endless:
      run:
        shell: {command: 'yes'}
`)
		began := time.Now()
		w := n.waitEnded(t, n.start(t, "test.chatty", `{}`).ID)
		require.Equal(t, persistence.StatusFailed, w.Status)
		p := serverless.ProblemOf(w)
		require.NotNil(t, p, lastError(w))
		require.Equal(t, "Process Output Too Large", p.Title)
		require.Equal(t, "/do/1/endless", p.Instance)
		require.Equal(t, 500, p.Status)
		require.Less(t, time.Since(began), 10*time.Second)
		var vars struct{ Data any }
		require.NoError(t, json.Unmarshal(w.Variables, &vars))
		require.Equal(t, map[string]any{"small": float64(600)}, vars.Data, "the output of the task within the limit")
	})
}

// Scripts run through node (js, javascript) and python3, with their arguments as argv after the
// script, their environment, and stdin (a value that is not a string as JSON).
func TestRunScript(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := processNode(t, store, serverless.RunOptions{})
		n.deploy(t, `document: {dsl: '1.0.0', namespace: test, name: scripts, version: '1.0.0'}
do:
  - js:
      run:
        script:
          language: javascript
          arguments: [hello, '${ .name }']
          environment: {GREETING: hi}
          stdin: '${ . }'
          code: |
            const [, , first, second] = process.argv;
            let input = '';
            process.stdin.on('data', (d) => { input += d; });
            process.stdin.on('end', () => {
              console.log(JSON.stringify({ first, second, greeting: process.env.GREETING,
                input: JSON.parse(input), leak: process.env.`+leakName+` ?? null }));
            });
      output: {as: '${ {name: $input.name, js: fromjson} }'}
  - python:
      run:
        script:
          language: python
          arguments: ['${ .name }']
          environment: {GREETING: hello}
          stdin: '${ .name }'
          code: |
            import json, os, sys
            print(json.dumps({"args": sys.argv[1:], "greeting": os.environ.get("GREETING"),
                              "input": sys.stdin.read(), "leak": os.environ.get("`+leakName+`")}))
      output: {as: '${ $input + {python: fromjson} }'}
  - failing:
      run:
        script: {language: python, code: 'raise SystemExit(7)'}
        return: code
      output: {as: '${ $input + {code: .} }'}
`)
		w := n.waitEnded(t, n.start(t, "test.scripts", `{"name": "ada"}`).ID)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.Equal(t, map[string]any{
			"name":   "ada",
			"js":     map[string]any{"first": "hello", "second": "ada", "greeting": "hi", "input": map[string]any{"name": "ada"}, "leak": nil},
			"python": map[string]any{"args": []any{"ada"}, "greeting": "hello", "input": "ada", "leak": nil},
			"code":   float64(7),
		}, output(t, w))
	})
}

// A document that needs a runner the node does not allow is refused at deploy, naming it, and so
// is what cairn does not run: await: false, a script's remote source.
func TestRunRefusedAtDeploy(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		none := newNode(t, store)
		shellOnly := newNodeWith(t, store, serverless.Options{Run: serverless.RunOptions{Allow: []string{"shell"}}})
		cases := []struct {
			name  string
			n     *node
			doc   string
			field string
			says  string
		}{
			{"shell not allowed", none, "do:\n  - sh: {run: {shell: {command: 'true'}}}\n", "/do/0/sh/run/shell",
				"this node does not allow run: shell (start it with --allow-run shell)"},
			{"script not allowed", shellOnly, "do:\n  - py: {run: {script: {language: python, code: 'print(1)'}}}\n", "/do/0/py/run/script",
				"this node does not allow run: script (start it with --allow-run script)"},
			{"not awaited", shellOnly, "do:\n  - sh: {run: {shell: {command: 'true'}, await: false}}\n", "/do/0/sh/run/await", "await: false"},
			{"bad return", shellOnly, "do:\n  - sh: {run: {shell: {command: 'true'}, return: exitcode}}\n", "/do/0/sh/run/return", "return must be one of"},
			{"container", shellOnly, "do:\n  - box: {run: {container: {image: alpine}}}\n", "/do/0/box/run/container", "this node does not allow run: container (start it with --allow-run container)"},
			{"misspelt key", shellOnly, "do:\n  - sh: {run: {shell: {command: 'true', argumnets: [a]}}}\n", "/do/0/sh/run/shell/argumnets", "unknown key"},
			{"bad environment name", shellOnly, "do:\n  - sh: {run: {shell: {command: 'true', environment: {'A=B': x}}}}\n", "/do/0/sh/run/shell/environment/A=B", "without ="},
		}
		allowed := newNodeWith(t, store, serverless.Options{Run: serverless.RunOptions{Allow: []string{"script"}}})
		cases = append(cases, struct {
			name  string
			n     *node
			doc   string
			field string
			says  string
		}{"remote source", allowed, "do:\n  - js: {run: {script: {language: js, source: {endpoint: 'https://example.com/a.js'}}}}\n", "/do/0/js/run/script/source", "not fetched"})
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				_, err := tc.n.engine.Deploy(context.Background(), header+tc.doc, "")
				var we *workflow.Error
				require.ErrorAs(t, err, &we, "%v", err)
				require.Equal(t, workflow.CodeInvalidInput, we.Code, "%v", err)
				require.Equal(t, tc.field, we.Field, "%v", err)
				require.Contains(t, we.Message, tc.says)
			})
		}
		defs, err := store.DefinitionList(context.Background(), persistence.DefinitionListParams{})
		require.NoError(t, err)
		require.Empty(t, defs, "a refused document stores nothing")
	})
}

// Cancelling a workflow kills the process its task runs, with its process group.
func TestRunCancelKillsTheProcess(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := processNode(t, store, serverless.RunOptions{})
		n.deploy(t, `document: {dsl: '1.0.0', namespace: test, name: long, version: '1.0.0'}
do:
  - sleep:
      run:
        shell:
          command: 'sleep 60 & echo $! > "$1.tmp"; mv "$1.tmp" "$1"; wait'
          arguments: ['${ .pidFile }']
`)
		pidFile := filepath.Join(t.TempDir(), "child.pid")
		w := n.start(t, "test.long", `{"pidFile": "`+pidFile+`"}`)
		var pid int
		require.Eventually(t, func() bool {
			raw, err := os.ReadFile(pidFile)
			if err != nil {
				return false
			}
			pid, err = strconv.Atoi(strings.TrimSpace(string(raw)))
			return err == nil
		}, 30*time.Second, 20*time.Millisecond, "the process started")
		require.True(t, alive(pid))
		_, err := n.engine.Cancel(context.Background(), workflow.ChangeParams{ID: w.ID, Reason: "test"})
		require.NoError(t, err)
		require.Eventually(t, func() bool { return !alive(pid) }, 10*time.Second, 50*time.Millisecond, "the process %d was killed", pid)
		got, err := store.WorkflowGet(context.Background(), w.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusCancelled, got.Status)
	})
}
