// Package nodetest gives tests the real JavaScript tools they drive cairn with: an npm package
// installed from a committed lock file, and Debian's Chromium. Without them a test skips with one
// line, and fails under CI=true, where they must be there.
package nodetest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ChromiumPath is where Debian's chromium package puts the browser (the CHROMIUM environment
// variable overrides it).
const ChromiumPath = "/usr/bin/chromium"

// missing skips the test for want of a tool, or fails it under CI=true.
func missing(t testing.TB, what string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is needed for this test (CI=true)", what)
	}
	t.Skipf("%s is not installed: this test does not run", what)
}

// Package copies package.json, package-lock.json and files from the folder src into a temporary
// folder, installs the packages there with npm ci (exact versions from the lock file), and returns
// the node binary and that folder.
func Package(t testing.TB, src string, files ...string) (node, dir string) {
	t.Helper()
	node, errNode := exec.LookPath("node")
	npm, errNPM := exec.LookPath("npm")
	if errNode != nil || errNPM != nil {
		missing(t, "node with npm")
	}
	dir = t.TempDir()
	for _, f := range append([]string{"package.json", "package-lock.json"}, files...) {
		b, err := os.ReadFile(filepath.Join(src, f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--silent")
	install.Dir = dir
	out, err := install.CombinedOutput()
	require.NoError(t, err, "npm ci: %s", out)
	return node, dir
}

// Chromium returns the path of the browser.
func Chromium(t testing.TB) string {
	t.Helper()
	browser := os.Getenv("CHROMIUM")
	if browser == "" {
		browser = ChromiumPath
	}
	if _, err := os.Stat(browser); err != nil {
		missing(t, "Chromium ("+browser+")")
	}
	return browser
}
