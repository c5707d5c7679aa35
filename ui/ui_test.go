package ui

import (
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func get(t *testing.T, srv *httptest.Server, path string) (*http.Response, string) {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(srv.URL + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// TestHandlerServesThePageAndItsModules checks what a browser asks for: the redirect to the
// page, the page with a policy that lets it reach only its own origin (its import map allowed by
// hash), every file the page names, and nothing but GET and HEAD.
func TestHandlerServesThePageAndItsModules(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	h := Handler("/ui")
	mux.Handle("/ui", h)
	mux.Handle("/ui/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	resp, _ := get(t, srv, "/ui")
	require.Equal(t, http.StatusMovedPermanently, resp.StatusCode)
	require.Equal(t, "/ui/", resp.Header.Get("Location"))

	resp, page := get(t, srv, "/ui/")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/html")
	csp := resp.Header.Get("Content-Security-Policy")
	require.Contains(t, csp, "default-src 'self'")
	require.Contains(t, csp, "connect-src 'self'")
	require.Regexp(t, `script-src 'self' 'sha256-[A-Za-z0-9+/]+=*'`, csp)

	// Every file the page and its modules name is served, as JavaScript or CSS.
	names := regexp.MustCompile(`(?:href|src)="\./([^"]+)"|"\./(vendor/[^"]+)"|from '\./([^']+)'`)
	seen := map[string]bool{}
	queue := []string{page}
	for len(queue) > 0 {
		text := queue[0]
		queue = queue[1:]
		for _, m := range names.FindAllStringSubmatch(text, -1) {
			name := m[1] + m[2] + m[3]
			if seen[name] {
				continue
			}
			seen[name] = true
			resp, body := get(t, srv, "/ui/"+name)
			require.Equal(t, http.StatusOK, resp.StatusCode, name)
			if strings.HasSuffix(name, ".js") {
				require.Contains(t, resp.Header.Get("Content-Type"), "javascript", name)
				queue = append(queue, body)
			}
		}
	}
	for _, want := range []string{"app.js", "workflows.js", "workflow.js", "pages.js", "graph.js", "vendor/preact.module.js", "vendor/graphql-ws.min.js", "style.css"} {
		require.True(t, seen[want], "the page names %s", want)
	}

	resp, _ = get(t, srv, "/ui/nothing.js")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	post, err := http.Post(srv.URL+"/ui/", "text/plain", strings.NewReader("x"))
	require.NoError(t, err)
	post.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, post.StatusCode)
}

// TestNoRequestLeavesTheMachine keeps URLs of other hosts out of the dashboard's own files (the
// vendored libraries only name XML namespaces, which are never fetched).
func TestNoRequestLeavesTheMachine(t *testing.T) {
	t.Parallel()
	url := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	namespace := regexp.MustCompile(`^http://www\.w3\.org$`)
	require.NoError(t, fs.WalkDir(files, "app", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Contains(path, "LICENSE") {
			return err
		}
		b, err := files.ReadFile(path)
		require.NoError(t, err)
		for _, u := range url.FindAllString(string(b), -1) {
			require.Regexp(t, namespace, u, "%s names another host", path)
		}
		return nil
	}))
}

// TestVendoredFilesMatchNPM runs vendor.sh into a temporary folder and compares: the committed
// app/vendor is exactly what the pinned npm packages publish. It needs bash and npm (skipped
// without them, failed under CI=true).
func TestVendoredFilesMatchNPM(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is needed to check the vendored files", tool)
			}
			t.Skipf("%s is not installed: the vendored files are not checked", tool)
		}
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, "bash", "vendor.sh", out)
	b, err := run.CombinedOutput()
	require.NoError(t, err, "vendor.sh: %s", b)

	committed, err := os.ReadDir(filepath.Join("app", "vendor"))
	require.NoError(t, err)
	produced, err := os.ReadDir(out)
	require.NoError(t, err)
	names := func(es []os.DirEntry) (n []string) {
		for _, e := range es {
			n = append(n, e.Name())
		}
		return n
	}
	require.Equal(t, names(produced), names(committed), "app/vendor holds exactly what vendor.sh makes")
	for _, e := range produced {
		want, err := os.ReadFile(filepath.Join(out, e.Name()))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join("app", "vendor", e.Name()))
		require.NoError(t, err)
		require.True(t, string(want) == string(got), "app/vendor/%s differs from what vendor.sh makes: run ui/vendor.sh and commit", e.Name())
	}
}
