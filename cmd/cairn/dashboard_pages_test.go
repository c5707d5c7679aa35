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
// browser script (testdata/dashboard/script, with local.mjs) against it, which must print "ok";
// the node must then stop cleanly.
func runPageScript(t *testing.T, script string, flags ...string) {
	t.Helper()
	browser := nodetest.Chromium(t)
	node, dir := nodetest.Package(t, filepath.Join("testdata", "dashboard"), script, "local.mjs")
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			args := append([]string{"--database", dbtest.URL(t, kind), "--demo", "--addr", "127.0.0.1:0", "--log-format", "json"}, flags...)
			n := startNode(t, nil, args...)
			require.NotEmpty(t, n.addr)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, script, "http://"+n.addr)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "CHROMIUM="+browser)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "the browser run failed:\n%s\ncairn's log:\n%s", out, n.output())
			require.Equal(t, "ok", strings.TrimSpace(string(out)))
			require.Zero(t, n.stop(t), n.output())
		})
	}
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
