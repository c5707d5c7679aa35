package main

import (
	"slices"
	"strings"
	"time"

	"github.com/cairnflow/cairn/internal/serverless"
)

// runLimits say which processes `run: shell`, `run: script` and `run: container` tasks may start
// on this node, and bound each one (docs/serverless-workflow.md, "Processes"). None runs unless
// --allow-run says so.
type runLimits struct {
	allow     string
	cli       string
	timeout   time.Duration
	maxOutput int64
}

// maxRunTimeout bounds --run-timeout: a process holds a worker's slot while it runs.
const maxRunTimeout = 24 * time.Hour

func (l *runLimits) register(fs *flagSet) {
	l.registerAllow(fs)
	fs.DurationVar(&l.timeout, "run-timeout", serverless.DefaultRunTimeout, "longest time one run: shell, run: script or run: container process may run (a task's timeout bounds it too); past it the process and its process group are killed and the task faults with a timeout (408)")
	fs.Int64Var(&l.maxOutput, "run-max-output-bytes", serverless.DefaultRunMaxOutputBytes, "most bytes one process may write to stdout and stderr together; past it the process is killed and the task faults (500)")
}

// registerAllow registers --allow-run alone (a node that only deploys checks documents with it).
func (l *runLimits) registerAllow(fs *flagSet) {
	fs.StringVar(&l.allow, "allow-run", "", "`runners` whose processes deployed workflows may start on this node, comma-separated: shell (sh -c), script (node, python3), container (any image, through --run-container-cli). Empty: none. A process runs as the node's user, with its rights, and a container with the container runtime's: allow it only to those who may deploy definitions")
	fs.StringVar(&l.cli, "run-container-cli", "", "the container runtime's `CLI` that runs run: container tasks (docker or podman, a name on PATH or a path). Empty: podman if on PATH, else docker")
}

func (l *runLimits) check() error {
	for _, r := range splitList(l.allow) {
		if !slices.Contains(serverless.Runners, r) {
			return usagef("--allow-run names %q; it may name %s", r, strings.Join(serverless.Runners, ", "))
		}
	}
	if l.timeout <= 0 || l.timeout > maxRunTimeout {
		return usagef("--run-timeout must be positive and at most %s, not %s", maxRunTimeout, l.timeout)
	}
	if l.maxOutput <= 0 {
		return usagef("--run-max-output-bytes must be positive, not %d", l.maxOutput)
	}
	return nil
}

func (l *runLimits) options() serverless.RunOptions {
	return serverless.RunOptions{Allow: splitList(l.allow), ContainerCLI: l.cli, Timeout: l.timeout, MaxOutputBytes: l.maxOutput}
}
