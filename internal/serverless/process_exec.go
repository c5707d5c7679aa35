package serverless

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cairnflow/cairn/workflow"
)

// runProcess runs a `run: shell` or `run: script` task on its input: a child process in a fresh
// temporary directory, in a process group of its own, with no environment from the node but PATH.
// A Problem faults the task; an error is the step's (its context ended: the workflow was cancelled,
// or the node stops), for the engine to handle.
func (r *run) runProcess(sc workflow.StepContext, t *task, in any) (any, *Problem, error) {
	ps := t.process
	if ps.container != nil {
		return r.runContainer(sc, t, in)
	}
	fail := func(title, format string, args ...any) *Problem {
		return &Problem{Type: errTypeRuntime, Status: 500, Title: title, Detail: fmt.Sprintf(format, args...), Instance: t.path}
	}
	args, vars, stdin, p := r.processInputs(t, in)
	if p != nil {
		return nil, p, nil
	}
	env := append([]string{"PATH=" + os.Getenv("PATH")}, vars...)
	dir, err := os.MkdirTemp("", "cairn-run-")
	if err != nil {
		return nil, fail("Process Not Started", "cannot make the process's directory: %v", err), nil
	}
	defer func() { _ = os.RemoveAll(dir) }()
	var argv []string
	if ps.runner == "shell" {
		v, p := r.evalTpl(t, ps.command, in, nil)
		if p != nil {
			return nil, p, nil
		}
		// sh -c command name args...: the arguments are $1, $2... of the command.
		argv = append([]string{"/bin/sh", "-c", textOf(v), "sh"}, args...)
	} else {
		file := filepath.Join(dir, "script"+ps.ext)
		if err := os.WriteFile(file, []byte(ps.code), 0o600); err != nil {
			return nil, fail("Process Not Started", "cannot write the script: %v", err), nil
		}
		argv = append([]string{ps.program, file}, args...)
	}

	opts := r.prog.run
	ctx, cancel := context.WithTimeout(r.ctx, opts.Timeout)
	defer cancel()
	res, err := execute(ctx, argv, env, dir, stdin, opts.MaxOutputBytes)
	return r.processOutcome(ctx, sc, t, in, res, err)
}

// processOutcome is the task's output, fault or step error once its process ended as res (err:
// it could not start), ctx being the context it ran in.
func (r *run) processOutcome(ctx context.Context, sc workflow.StepContext, t *task, in any, res processResult, err error) (any, *Problem, error) {
	ps, opts := t.process, r.prog.run
	fail := func(title, format string, args ...any) *Problem {
		return &Problem{Type: errTypeRuntime, Status: 500, Title: title, Detail: fmt.Sprintf(format, args...), Instance: t.path}
	}
	switch {
	case err != nil:
		return nil, fail("Process Not Started", "%v", err), nil
	case res.tooLarge:
		return nil, fail("Process Output Too Large", "the process wrote more than %d bytes to stdout and stderr and was killed", opts.MaxOutputBytes), nil
	case res.signaled && sc.Err() != nil:
		return nil, nil, fmt.Errorf("the process of task %s was stopped with its step: %w", t.path, sc.Err())
	case res.signaled && r.ctx.Err() != nil:
		return nil, timeoutProblem(t), nil
	case res.signaled && ctx.Err() != nil:
		return nil, &Problem{Type: errTypeTimeout, Status: 408, Title: "Process Timeout",
			Detail: fmt.Sprintf("the process ran longer than %s and was killed", opts.Timeout), Instance: t.path}, nil
	case res.signaled:
		return nil, fail("Process Failed", "the process ended by %s", res.state), nil
	}
	stdout, stderr := validText(res.stdout), validText(res.stderr)
	if res.code != 0 && ps.ret != "code" && ps.ret != "all" {
		return nil, fail("Process Failed", "the process exited with code %d%s", res.code, tail(stderr)), nil
	}
	switch ps.ret {
	case "stderr":
		return stderr, nil, nil
	case "code":
		return res.code, nil, nil
	case "all":
		return map[string]any{"code": res.code, "stdout": stdout, "stderr": stderr}, nil, nil
	case "none":
		return in, nil, nil
	}
	return stdout, nil, nil
}

// processInputs evaluates a process task's arguments, environment (name=value, by name) and
// stdin (nil: none) on its input.
func (r *run) processInputs(t *task, in any) (args, env []string, stdin []byte, p *Problem) {
	ps := t.process
	if ps.args != nil {
		v, p := r.evalTpl(t, ps.args, in, nil)
		if p != nil {
			return nil, nil, nil, p
		}
		args = argvOf(v)
	}
	names := make([]string, 0, len(ps.env))
	for k := range ps.env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v, p := r.evalTpl(t, ps.env[k], in, nil)
		if p != nil {
			return nil, nil, nil, p
		}
		env = append(env, k+"="+textOf(v))
	}
	if ps.stdin != nil {
		v, p := r.evalTpl(t, ps.stdin, in, nil)
		if p != nil {
			return nil, nil, nil, p
		}
		if v != nil {
			stdin = []byte(textOf(v))
		}
	}
	return args, env, stdin, nil
}

// processResult is how a process ended and what it wrote.
type processResult struct {
	code           int
	signaled       bool   // killed by a signal (code is then -1)
	state          string // how it ended, for people
	stdout, stderr []byte
	tooLarge       bool
}

// execute runs argv to its end. Its output is read through pipes of its own: once the process
// exits, whatever it left running in its process group is killed, so no process outlives its task.
func execute(ctx context.Context, argv, env []string, dir string, stdin []byte, maxOutput int64) (processResult, error) {
	// The thread that starts the process lives until it is reaped (see dieWithNode).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var res processResult
	rOut, wOut, err := os.Pipe()
	if err != nil {
		return res, err
	}
	defer closeAll(rOut, wOut)
	rErr, wErr, err := os.Pipe()
	if err != nil {
		return res, err
	}
	defer closeAll(rErr, wErr)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = env, dir, wOut, wErr
	var wIn *os.File
	if stdin != nil {
		var rIn *os.File
		if rIn, wIn, err = os.Pipe(); err != nil {
			return res, err
		}
		defer closeAll(rIn, wIn)
		cmd.Stdin = rIn
	}
	cmd.SysProcAttr = ownGroup()
	cmd.Cancel = func() error { killGroup(cmd.Process); return nil }
	cmd.WaitDelay = time.Second
	out := &capped{max: maxOutput, kill: func() { killGroup(cmd.Process) }}
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("cannot start %s: %w", argv[0], err)
	}
	// The child holds its own ends of the pipes now.
	closeAll(wOut, wErr)
	if cmd.Stdin != nil {
		closeAll(cmd.Stdin.(*os.File))
		go func() { _, _ = wIn.Write(stdin); closeAll(wIn) }()
	}
	var stdout, stderr bytes.Buffer
	var wg sync.WaitGroup
	for _, s := range []struct {
		r   *os.File
		buf *bytes.Buffer
	}{{rOut, &stdout}, {rErr, &stderr}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = io.Copy(stream{out, s.buf}, s.r)
		}()
	}
	_ = cmd.Wait()
	killGroup(cmd.Process)
	// The pipes end when every process holding them is gone; one that left the group is cut off.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		_ = rOut.SetReadDeadline(time.Now())
		_ = rErr.SetReadDeadline(time.Now())
		<-done
	}
	st := cmd.ProcessState
	res.code, res.state = st.ExitCode(), st.String()
	res.signaled = res.code < 0
	res.stdout, res.stderr, res.tooLarge = stdout.Bytes(), stderr.Bytes(), out.over
	return res, nil
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			_ = f.Close()
		}
	}
}

var errOutputLimit = errors.New("the process's output passed its limit")

// capped counts what a process writes to stdout and stderr together; past max it kills the
// process and keeps nothing more.
type capped struct {
	mu   sync.Mutex
	max  int64
	n    int64
	over bool
	kill func()
}

// stream is one of a process's outputs, written to buf within the budget of out.
type stream struct {
	out *capped
	buf *bytes.Buffer
}

func (s stream) Write(p []byte) (int, error) {
	c := s.out
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.over {
		return 0, errOutputLimit
	}
	if room := c.max - c.n; int64(len(p)) > room {
		s.buf.Write(p[:room])
		c.n, c.over = c.max, true
		c.kill()
		return 0, errOutputLimit
	}
	s.buf.Write(p)
	c.n += int64(len(p))
	return len(p), nil
}

// argvOf turns evaluated arguments into argv: a list item by item, a map as name=value in the
// order of the names (a name whose value is null alone). Values that are not strings are JSON.
func argvOf(v any) []string {
	switch a := v.(type) {
	case []any:
		out := make([]string, len(a))
		for i, x := range a {
			out[i] = textOf(x)
		}
		return out
	case map[string]any:
		names := make([]string, 0, len(a))
		for k := range a {
			names = append(names, k)
		}
		sort.Strings(names)
		out := make([]string, 0, len(a))
		for _, k := range names {
			if a[k] == nil {
				out = append(out, k)
			} else {
				out = append(out, k+"="+textOf(a[k]))
			}
		}
		return out
	case nil:
		return nil
	}
	return []string{textOf(v)}
}

// textOf is a value as text: a string as it is, anything else as JSON.
func textOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// validText is a process's output as a string, its bytes that are not UTF-8 replaced.
func validText(b []byte) string { return strings.ToValidUTF8(string(b), "\uFFFD") }

// tail is the end of a failed process's stderr, for its Problem's detail.
func tail(stderr string) string {
	s := strings.TrimSpace(stderr)
	if s == "" {
		return ""
	}
	const keep = 1024
	if len(s) > keep {
		s = "…" + validText([]byte(s[len(s)-keep:]))
	}
	return ": " + s
}
