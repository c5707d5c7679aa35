package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/nodetest"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// runPageScript runs the real binary with --demo (and flags) on each backend and a dashboard
// browser script (testdata/dashboard/script, with local.mjs) against it.
func runPageScript(t *testing.T, script string, flags ...string) {
	t.Helper()
	browser := nodetest.Chromium(t)
	node, dir := nodetest.Package(t, filepath.Join("testdata", "dashboard"), script, "local.mjs")
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			args := append([]string{"--database", dbtest.URL(t, kind), "--demo", "--addr", "127.0.0.1:0", "--log-format", "json"}, flags...)
			runScriptAgainst(t, node, dir, browser, startNode(t, nil, args...), script)
		})
	}
}

// runAuthPageScript runs the real binary with --auth and --demo on SQLite, and a dashboard browser
// script against it given an admin token made with cairn token create.
func runAuthPageScript(t *testing.T, script string) {
	t.Helper()
	browser := nodetest.Chromium(t)
	node, dir := nodetest.Package(t, filepath.Join("testdata", "dashboard"), script, "local.mjs")
	db := dbtest.URL(t, dbtest.Backends[0])
	r := runCairn(t, "", nil, "migrate", "up", "--database", db)
	require.Zero(t, r.code, r.stderr)
	r = runCairn(t, "", nil, "token", "create", "--name", "dashboard", "--database", db)
	require.Zero(t, r.code, r.stderr)
	n := startNode(t, nil, "--auth", "--database", db, "--demo", "--addr", "127.0.0.1:0", "--log-format", "json")
	runScriptAgainst(t, node, dir, browser, n, script, strings.TrimSpace(r.stdout))
}

// runScriptAgainst runs a browser script against node n (its URL, then args), which must print
// "ok" and nothing else; n must then stop cleanly.
func runScriptAgainst(t *testing.T, node, dir, browser string, n *node, script string, args ...string) {
	t.Helper()
	require.NotEmpty(t, n.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script, "http://" + n.addr}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CHROMIUM="+browser)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the browser run failed:\n%s\ncairn's log:\n%s", out, n.output())
	require.Equal(t, "ok", strings.TrimSpace(string(out)))
	require.Zero(t, n.stop(t), n.output())
}

// TestDashboardUnderAuth: the page loads without a token, asks for one, and with it reads over
// HTTP and subscribes over the websocket (testdata/dashboard/auth.mjs).
func TestDashboardUnderAuth(t *testing.T) {
	t.Parallel()
	runAuthPageScript(t, "auth.mjs")
}

// TestDashboardTokensAndSchedules drives the API tokens page and schedule edit and delete with an
// admin token (testdata/dashboard/tokens.mjs).
func TestDashboardTokensAndSchedules(t *testing.T) {
	t.Parallel()
	runAuthPageScript(t, "tokens.mjs")
}

// TestDashboardOperationsInChromium drives the bulk operations and audit log pages
// (testdata/dashboard/operations.mjs): an action on every workflow matching the list's filter,
// confirmed on its dry run's count, followed to its end; the list of operations; an operation's
// failures; the audit log filtered by actor.
func TestDashboardOperationsInChromium(t *testing.T) {
	t.Parallel()
	runPageScript(t, "operations.mjs")
}

// TestDashboardAlertsInChromium drives the alert rules page, the node's webhooks allowed to reach
// 127.0.0.1 by --http-allow (testdata/dashboard/alerts.mjs): a refused private webhook, a rule
// made on the page, a cancelled workflow's delivery to a local receiver shown DELIVERED, and the
// rule deleted.
func TestDashboardAlertsInChromium(t *testing.T) {
	t.Parallel()
	runPageScript(t, "alerts.mjs", "--http-allow", "127.0.0.1")
}

// TestDashboardLimitsInChromium drives the limits page (testdata/dashboard/limits.mjs): a refused
// limit, a concurrency limit set on the page, a key's running and waiting workflows, the waiting
// one's page saying why it is held back, and the limit cleared.
func TestDashboardLimitsInChromium(t *testing.T) {
	t.Parallel()
	runPageScript(t, "limits.mjs")
}
