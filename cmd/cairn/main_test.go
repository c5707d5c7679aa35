package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testVersion is stamped into the test binary through -ldflags, as a release build would be.
const testVersion = "v0.0.0-cairntest"

// cairnBin is the binary under test, built once by TestMain (with -race when the tests run with it).
var cairnBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cairn-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "creating a folder for the binary:", err)
		os.Exit(1)
	}
	cairnBin = filepath.Join(dir, "cairn")
	args := []string{"build", "-o", cairnBin, "-ldflags", "-X main.version=" + testVersion}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building cairn:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// result is what a finished cairn process left.
type result struct {
	stdout, stderr string
	code           int
}

// cairnEnv is the environment of a cairn subprocess: the test's, without CAIRN_* variables (so
// the developer's shell cannot change what a test sees), plus extra.
func cairnEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CAIRN_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// runCairn runs the binary to completion in dir (the test's temporary folder when empty).
func runCairn(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cairnBin, args...)
	cmd.Dir = dir
	cmd.Env = cairnEnv(env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &exitErr):
		code = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("running cairn %s: %v", strings.Join(args, " "), err)
	}
	requireNoRace(t, stderr.String())
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// requireOneLineError checks the promise for bad input: a non-zero exit and exactly one line on
// stderr, containing want.
func requireOneLineError(t *testing.T, r result, want string) {
	t.Helper()
	require.NotZero(t, r.code, "exit status; stderr: %s", r.stderr)
	lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
	require.Len(t, lines, 1, "stderr must be one line, got: %q", r.stderr)
	require.Contains(t, lines[0], want)
}

func requireNoRace(t *testing.T, stderr string) {
	t.Helper()
	require.NotContains(t, stderr, "WARNING: DATA RACE", "the cairn process reported a data race")
}

// node is a running `cairn serve` with JSON logs.
type node struct {
	cmd  *exec.Cmd
	addr string // host:port of the HTTP server, from the "http server listening" log line

	mu      sync.Mutex
	logs    []map[string]any
	raw     strings.Builder
	changed chan struct{} // closed and replaced on every new line and on exit

	exited chan struct{}
	code   int
}

// startNode runs `cairn serve args...` (the args must ask for JSON logs, by flag or environment)
// and returns once it logs "cairn started". The process is killed when the test ends if it still
// runs.
func startNode(t *testing.T, env []string, args ...string) *node {
	t.Helper()
	cmd := exec.Command(cairnBin, append([]string{"serve"}, args...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = cairnEnv(env...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	cmd.Stdout = io.Discard
	n := &node{cmd: cmd, changed: make(chan struct{}), exited: make(chan struct{})}
	require.NoError(t, cmd.Start())
	go n.readLogs(stderr)
	t.Cleanup(func() {
		select {
		case <-n.exited:
		default:
			_ = cmd.Process.Kill()
			<-n.exited
		}
	})
	n.waitLog(t, "cairn started")
	if line := n.findLog("http server listening"); line != nil {
		n.addr, _ = line["addr"].(string)
	}
	return n
}

func (n *node) readLogs(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		var line map[string]any
		_ = json.Unmarshal(sc.Bytes(), &line)
		n.mu.Lock()
		n.raw.WriteString(sc.Text() + "\n")
		if line != nil {
			n.logs = append(n.logs, line)
		}
		close(n.changed)
		n.changed = make(chan struct{})
		n.mu.Unlock()
	}
	err := n.cmd.Wait()
	var exitErr *exec.ExitError
	n.mu.Lock()
	switch {
	case errors.As(err, &exitErr):
		n.code = exitErr.ExitCode()
	case err != nil:
		n.code = -1
	}
	n.mu.Unlock()
	close(n.exited)
}

// findLog returns the first log line with a message, or nil.
func (n *node) findLog(msg string) map[string]any {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, line := range n.logs {
		if line["msg"] == msg {
			return line
		}
	}
	return nil
}

func (n *node) output() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.raw.String()
}

// waitLog waits up to a minute for a log line with a message and returns it.
func (n *node) waitLog(t *testing.T, msg string) map[string]any {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		n.mu.Lock()
		changed := n.changed
		n.mu.Unlock()
		if line := n.findLog(msg); line != nil {
			return line
		}
		select {
		case <-changed:
		case <-n.exited:
			if line := n.findLog(msg); line != nil {
				return line
			}
			t.Fatalf("cairn serve exited (status %d) before logging %q:\n%s", n.code, msg, n.output())
		case <-deadline:
			t.Fatalf("cairn serve did not log %q within a minute:\n%s", msg, n.output())
		}
	}
}

// stop sends SIGTERM and returns the exit status once the process ends.
func (n *node) stop(t *testing.T) int {
	t.Helper()
	require.NoError(t, n.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-n.exited:
	case <-time.After(time.Minute):
		t.Fatalf("cairn serve did not exit within a minute of SIGTERM:\n%s", n.output())
	}
	requireNoRace(t, n.output())
	return n.code
}

// get fetches a path from the node and returns the status and the body.
func (n *node) get(t *testing.T, path string) (int, string) {
	t.Helper()
	require.NotEmpty(t, n.addr, "the node logged no listening address:\n%s", n.output())
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Get("http://" + n.addr + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}
