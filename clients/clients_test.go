// Package clients holds cairn's client libraries: clients/python (cairn_client) and
// clients/typescript (@cairnflow/client). Its test runs each library's own test suite against the
// real cairn binary, on every backend, with --auth.
package clients

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
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

// workerFunction is the one function the suites' worker token serves.
const workerFunction = "test.worker_token"

// cairnBin is the binary under test, built once by TestMain. It is built without -race even when
// the tests run with it: the suites measure the clients, and the server's races are the other
// packages' tests' business.
var cairnBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cairn-clients-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "creating a folder for the binary:", err)
		os.Exit(1)
	}
	cairnBin = filepath.Join(dir, "cairn")
	build := exec.Command("go", "build", "-o", cairnBin, "../cmd/cairn")
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

// need returns the path of a tool; without it the test skips, and fails under CI=true.
func need(t *testing.T, tool string) string {
	t.Helper()
	path, err := exec.LookPath(tool)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is needed for this test (CI=true): %v", tool, err)
		}
		t.Skipf("%s is not installed: this test does not run", tool)
	}
	return path
}

// server is a running cairn serve --auth, with an admin token and a worker token for workerFunction.
type server struct {
	url, admin, worker string
	mu                 sync.Mutex
	log                bytes.Buffer
}

func (s *server) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.Write(p)
}

func (s *server) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// env is what a suite needs to find the server.
func (s *server) env(backend string) []string {
	return append(os.Environ(), "CAIRN_URL="+s.url, "CAIRN_ADMIN_TOKEN="+s.admin, "CAIRN_WORKER_TOKEN="+s.worker,
		"CAIRN_WORKER_FUNCTION="+workerFunction, "CAIRN_BACKEND="+backend)
}

func cairn(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(cairnBin, args...).Output()
	var stderr []byte
	if e, ok := err.(*exec.ExitError); ok {
		stderr = e.Stderr
	}
	require.NoError(t, err, "cairn %s: %s", strings.Join(args, " "), stderr)
	return strings.TrimSpace(string(out))
}

// startServer migrates a fresh database, makes the tokens, and serves it until the test ends.
func startServer(t *testing.T, dbURL string) *server {
	t.Helper()
	cairn(t, "migrate", "up", "--database", dbURL)
	s := &server{
		admin:  cairn(t, "token", "create", "--database", dbURL, "--name", "admin"),
		worker: cairn(t, "token", "create", "--database", dbURL, "--name", "worker", "--role", "worker", "--functions", workerFunction),
	}
	cmd := exec.Command(cairnBin, "serve", "--database", dbURL, "--auth", "--addr", "127.0.0.1:0", "--log-format", "json",
		"--ping-interval", "1s") // the suites check that a client's wait ends at its timeout while pings arrive
	cmd.Dir = t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CAIRN_") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	addr := make(chan string, 1)
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			_, _ = s.Write(append(sc.Bytes(), '\n'))
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "http server listening" {
				addr <- line.Addr
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	select {
	case a := <-addr:
		s.url = "http://" + a + "/graphql"
	case <-exited:
		t.Fatalf("cairn exited before it listened:\n%s", s.output())
	case <-time.After(time.Minute):
		t.Fatalf("cairn did not listen within a minute:\n%s", s.output())
	}
	return s
}

// runSuite runs a test suite and fails the test with its output when it fails.
func runSuite(t *testing.T, s *server, backend, dir string, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(s.env(backend), "PYTHONDONTWRITEBYTECODE=1", "PYTHONPATH="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %s:\n%s\ncairn's log:\n%s", name, strings.Join(args, " "), out, s.output())
	t.Logf("%s", summary(string(out)))
}

// summary keeps the lines of a suite's output that count its tests (unittest's and node --test's).
func summary(out string) string {
	var keep []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "Ran ") || line == "OK" || strings.HasPrefix(line, "OK (") ||
			strings.HasPrefix(line, "# tests ") || strings.HasPrefix(line, "# pass ") || strings.HasPrefix(line, "# skipped ") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "; ")
}

// TestPythonClient runs clients/python's unittest suite (tests/) against cairn on each backend.
func TestPythonClient(t *testing.T) {
	t.Parallel()
	python := need(t, "python3")
	dir, err := filepath.Abs("python")
	require.NoError(t, err)
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			s := startServer(t, dbtest.URL(t, kind))
			runSuite(t, s, string(kind), dir, python, "-m", "unittest", "discover", "-s", "tests", "-t", ".", "-v")
		})
	}
}

// TestTypeScriptClient installs clients/typescript's dev packages with npm ci (from its lock
// file) in a copy of the package, checks that the committed generated types and built output are
// what npm run generate and npm run build write from the schema and the sources, and runs its
// node --test suite against cairn on each backend.
func TestTypeScriptClient(t *testing.T) {
	t.Parallel()
	node := need(t, "node")
	npm := need(t, "npm")
	root := t.TempDir()
	pkg := filepath.Join(root, "clients", "typescript")
	require.NoError(t, copyTree("typescript", pkg))
	for _, f := range []string{"schema.graphqls", "mutations.graphqls", "operators.graphqls", "visibility.graphqls", "flowcontrol.graphqls",
		"access.graphqls", "alerts.graphqls"} {
		b, err := os.ReadFile(filepath.Join("..", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(root, f), b, 0o644))
	}
	npmRun(t, npm, pkg, "ci", "--no-audit", "--no-fund", "--silent")

	t.Run("generated", func(t *testing.T) {
		npmRun(t, npm, pkg, "run", "--silent", "generate")
		npmRun(t, npm, pkg, "run", "--silent", "build")
		for _, dir := range []string{"src", "dist"} {
			want, err := readTree(filepath.Join("typescript", dir))
			require.NoError(t, err)
			got, err := readTree(filepath.Join(pkg, dir))
			require.NoError(t, err)
			for name := range got {
				require.Contains(t, want, name, "npm run generate/build writes %s/%s, which is not committed: run both in clients/typescript and commit", dir, name)
			}
			for name, content := range want {
				require.Equal(t, content, got[name], "clients/typescript/%s/%s is stale: run npm run generate and npm run build in clients/typescript and commit", dir, name)
			}
		}
	})

	suites, err := filepath.Glob(filepath.Join(pkg, "test", "*.test.mjs"))
	require.NoError(t, err)
	require.NotEmpty(t, suites)
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			s := startServer(t, dbtest.URL(t, kind))
			runSuite(t, s, string(kind), pkg, node, append([]string{"--test", "--test-concurrency=1"}, suites...)...)
		})
	}
}

func npmRun(t *testing.T, npm, dir string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "npm %s: %s", strings.Join(args, " "), out)
}

// copyTree copies a folder, without node_modules.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}

// readTree reads every file under a folder, by path relative to it.
func readTree(dir string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		files[rel] = string(b)
		return nil
	})
	return files, err
}
