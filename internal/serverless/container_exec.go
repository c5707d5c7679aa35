package serverless

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairnflow/cairn/workflow"
)

// The labels cairn puts on the containers it runs.
const (
	labelWorkflow    = "io.cairnflow.workflow"
	labelRemoveAfter = "io.cairnflow.remove-after" // unix seconds past which cairn removes it
)

// cliNotStarted is the exit code of docker and podman run when the CLI itself failed (no such
// image, a pull that failed, a name in use): the container did not run.
const cliNotStarted = 125

// runContainer runs a `run: container` task: `<cli> run` in the foreground, its stdout and stderr
// the container's, bounded like a process. When the run is cut short (timeout, output limit,
// cancellation), the container is removed (cleanup: always) or killed. The CLI gets the node's
// environment (it may need DOCKER_HOST, CONTAINERS_CONF); the container gets only the task's
// environment, through a file.
func (r *run) runContainer(sc workflow.StepContext, t *task, in any) (any, *Problem, error) {
	cs := t.process.container
	fail := func(format string, args ...any) *Problem {
		return &Problem{Type: errTypeRuntime, Status: 500, Title: "Container Not Started", Detail: fmt.Sprintf(format, args...), Instance: t.path}
	}
	args, env, stdin, p := r.processInputs(t, in)
	if p != nil {
		return nil, p, nil
	}
	v, p := r.evalTpl(t, cs.image, in, nil)
	if p != nil {
		return nil, p, nil
	}
	image := textOf(v)
	if strings.TrimSpace(image) == "" || strings.HasPrefix(image, "-") {
		return nil, fail("the image %q is not an image's name", image), nil
	}
	name := r.defaultContainerName(t)
	if cs.name != nil {
		v, p := r.evalTpl(t, cs.name, in, nil)
		if p != nil {
			return nil, p, nil
		}
		if name = textOf(v); !containerNamePattern.MatchString(name) {
			return nil, fail("the container's name %q is not one a container may have: letters, digits, _ . and -, at most 128", name), nil
		}
	}
	for _, kv := range env {
		if strings.ContainsAny(kv, "\r\n\x00") {
			k, _, _ := strings.Cut(kv, "=")
			return nil, fail("the environment variable %s has a line break or NUL, which a container's environment cannot take", k), nil
		}
	}
	dir, err := os.MkdirTemp("", "cairn-run-")
	if err != nil {
		return nil, fail("cannot make the run's directory: %v", err), nil
	}
	defer func() { _ = os.RemoveAll(dir) }()
	envFile := ""
	if len(env) > 0 {
		envFile = filepath.Join(dir, "env")
		if err := os.WriteFile(envFile, []byte(strings.Join(env, "\n")+"\n"), 0o600); err != nil {
			return nil, fail("cannot write the container's environment: %v", err), nil
		}
	}
	opts := r.prog.run
	removeAfter := time.Time{}
	if cs.cleanup == "eventually" {
		removeAfter = time.Now().Add(opts.Timeout + cs.after)
	}
	argv := containerArgv(cs, image, name, r.wfID, envFile, removeAfter, stdin != nil, args)
	maybeSweep(cs.cli)

	ctx, cancel := context.WithTimeout(r.ctx, opts.Timeout)
	defer cancel()
	res, err := execute(ctx, argv, os.Environ(), dir, stdin, opts.MaxOutputBytes)
	cut := err == nil && (res.signaled || res.tooLarge)
	if cut {
		// kill sends SIGKILL at once (rm -f would wait for SIGTERM first).
		containerCommand(cs.cli, "kill", name)
		if cs.cleanup == "always" {
			containerCommand(cs.cli, "rm", "-f", name)
		}
	}
	if cs.cleanup == "eventually" {
		time.AfterFunc(cs.after, func() { containerCommand(cs.cli, "rm", "-f", name) })
	}
	if err == nil && !cut && res.code == cliNotStarted {
		return nil, fail("%s could not run the container (exit code %d)%s", filepath.Base(cs.cli), res.code, tail(validText(res.stderr))), nil
	}
	return r.processOutcome(ctx, sc, t, in, res, err)
}

// containerArgv is the command line that runs a container: the command, if any, through
// /bin/sh -c in the container, its arguments being $1, $2...; else the image's own command with
// the arguments.
func containerArgv(cs *containerSpec, image, name, wfID, envFile string, removeAfter time.Time, stdin bool, args []string) []string {
	argv := []string{cs.cli, "run", "--quiet", "--name", name, "--pull=" + cs.pull, "--label", labelWorkflow + "=" + wfID}
	if !removeAfter.IsZero() {
		argv = append(argv, "--label", labelRemoveAfter+"="+strconv.FormatInt(removeAfter.Unix(), 10))
	}
	if cs.cleanup == "always" {
		argv = append(argv, "--rm")
	}
	if strings.Contains(filepath.Base(cs.cli), "podman") {
		// podman passes the node's proxy variables into the container unless told not to.
		argv = append(argv, "--http-proxy=false")
	}
	if stdin {
		argv = append(argv, "--interactive")
	}
	if envFile != "" {
		argv = append(argv, "--env-file", envFile)
	}
	for _, p := range cs.ports {
		argv = append(argv, "--publish", p)
	}
	for _, v := range cs.volumes {
		argv = append(argv, "--volume", v)
	}
	if cs.command != "" {
		argv = append(argv, "--entrypoint", "/bin/sh", image, "-c", cs.command, "sh")
	} else {
		argv = append(argv, image)
	}
	return append(argv, args...)
}

var nameUnsafe = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// defaultContainerName follows the spec's convention, {workflow.name}-{uuid}.{workflow.namespace}-{task.name},
// with what a container's name cannot have replaced by -, cut to 128 bytes.
func (r *run) defaultContainerName(t *task) string {
	ns, name, _ := strings.Cut(r.prog.typ, ".")
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	s := nameUnsafe.ReplaceAllString(name+"-"+hex.EncodeToString(b)+"."+ns+"-"+t.name, "-")
	s = strings.TrimLeft(s, "_.-")
	if len(s) > 128 {
		s = s[:128]
	}
	if s == "" {
		s = hex.EncodeToString(b)
	}
	return s
}

// containerCommand runs a short command of the CLI (rm, kill) for a container; it is bounded and
// its failure (the container is already gone) ignored.
func containerCommand(cli string, args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = exec.CommandContext(ctx, cli, args...).Run()
}

// sweeps remember when each CLI's containers were last swept.
var sweeps = struct {
	sync.Mutex
	last map[string]time.Time
}{last: map[string]time.Time{}}

// sweepInterval is how often at most a node looks for containers to remove.
const sweepInterval = time.Minute

// maybeSweep removes, in the background and at most every sweepInterval, the containers of
// cleanup: eventually whose time is past: those a node that stopped did not remove.
func maybeSweep(cli string) {
	sweeps.Lock()
	defer sweeps.Unlock()
	if time.Since(sweeps.last[cli]) < sweepInterval {
		return
	}
	sweeps.last[cli] = time.Now()
	go sweepContainers(cli, time.Now())
}

// maxSwept bounds the containers one sweep looks at.
const maxSwept = 256

// sweepContainers removes the containers cairn labelled to be removed before now.
func sweepContainers(cli string, now time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, cli, "ps", "--all", "--quiet", "--no-trunc", "--filter", "label="+labelRemoveAfter).Output()
	if err != nil {
		return
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for n := 0; sc.Scan() && n < maxSwept; n++ {
		id := strings.TrimSpace(sc.Text())
		if id == "" || strings.HasPrefix(id, "-") {
			continue
		}
		at, err := exec.CommandContext(ctx, cli, "inspect", "--format", `{{index .Config.Labels "`+labelRemoveAfter+`"}}`, id).Output()
		if err != nil {
			continue
		}
		secs, err := strconv.ParseInt(strings.TrimSpace(string(at)), 10, 64)
		if err == nil && now.Unix() > secs {
			_ = exec.CommandContext(ctx, cli, "rm", "-f", id).Run()
		}
	}
}
