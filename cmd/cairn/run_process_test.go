//go:build linux

package main

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence/dbtest"
)

// TestNodeKilledDuringRunShell kills a node (SIGKILL) while a deployed workflow's run: shell task
// runs: the kernel kills the process with the node, and another node runs the task again (delivery
// is at least once) and finishes the workflow.
func TestNodeKilledDuringRunShell(t *testing.T) {
	t.Parallel()
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			args := []string{"--database", dbtest.URL(t, kind), "--addr", "127.0.0.1:0", "--log-format", "json", "--allow-run", "shell",
				"--heartbeat-interval", "200ms", "--executor-expiry", "2s"}
			first := startNode(t, nil, args...)
			var deployed struct {
				DeployDefinition struct{ Definition struct{ Type string } }
			}
			first.graphql(t, deployMutation, map[string]any{"source": "document: {dsl: '1.0.0', namespace: ops, name: job, version: '1.0.0'}\n" +
				"do:\n  - job:\n      run:\n        shell:\n" +
				`          command: 'echo run >> "$1/runs"; if [ "$(wc -l < "$1/runs")" -eq 1 ]; then echo $$ > "$1/pid.tmp"; mv "$1/pid.tmp" "$1/pid"; exec sleep 60; fi; printf done'` + "\n" +
				"          arguments: ['${ .dir }']\n" +
				"      output: {as: '${ {out: .} }'}\n"}, &deployed)
			id := first.startWith(t, "ops.job", map[string]any{"dir": dir})
			var pid int
			waitFor(t, 30*time.Second, "the first run", func() bool {
				raw, err := os.ReadFile(filepath.Join(dir, "pid"))
				if err != nil {
					return false
				}
				pid, err = strconv.Atoi(strings.TrimSpace(string(raw)))
				return err == nil
			})
			require.NoError(t, first.cmd.Process.Kill())
			<-first.exited
			waitFor(t, 10*time.Second, "the process killed with its node", func() bool {
				if syscall.Kill(pid, 0) != nil {
					return true
				}
				stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
				i := strings.LastIndexByte(string(stat), ')')
				return err != nil || (i > 0 && i+2 < len(stat) && stat[i+2] == 'Z')
			})

			second := startNode(t, nil, args...)
			require.Equal(t, map[string]any{"out": "done"}, second.finishedOutput(t, id))
			runs, err := os.ReadFile(filepath.Join(dir, "runs"))
			require.NoError(t, err)
			require.Equal(t, "run\nrun\n", string(runs), "the task ran again after its node died")
			require.Zero(t, second.stop(t), second.output())
		})
	}
}

// --allow-run names only runners cairn has; --run-timeout, --run-max-output-bytes and
// --run-container-cli (CAIRN_RUN_CONTAINER_CLI) reach the compiler's options.
func TestRunFlags(t *testing.T) {
	t.Parallel()
	env := &environment{stdout: io.Discard, stderr: io.Discard, getenv: func(k string) string {
		return map[string]string{"CAIRN_ALLOW_RUN": "shell, script, container", "CAIRN_RUN_CONTAINER_CLI": "docker"}[k]
	}}
	cfg, err := parseServeConfig(env, []string{"--run-timeout", "5s", "--run-max-output-bytes", "4096"})
	require.NoError(t, err)
	opts := cfg.run.options()
	require.Equal(t, []string{"shell", "script", "container"}, opts.Allow)
	require.Equal(t, "docker", opts.ContainerCLI)
	require.Equal(t, 5*time.Second, opts.Timeout)
	require.Equal(t, int64(4096), opts.MaxOutputBytes)
	for _, bad := range [][]string{{"--allow-run", "shell,kubernetes"}, {"--run-timeout", "0s"}, {"--run-timeout", "25h"}, {"--run-max-output-bytes", "0"}} {
		_, err := parseServeConfig(&environment{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}, bad)
		require.Error(t, err, "%v", bad)
	}
}
