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

// TestDashboardAlertsInChromium runs the real binary with --demo on each backend, its webhooks
// allowed to reach 127.0.0.1 by --http-allow, and drives the alert rules page in Chromium: a
// refused private webhook, a rule made on the page, a cancelled workflow's delivery to a local
// receiver shown DELIVERED, and the rule deleted (testdata/dashboard/alerts.mjs).
func TestDashboardAlertsInChromium(t *testing.T) {
	t.Parallel()
	browser := nodetest.Chromium(t)
	node, dir := nodetest.Package(t, filepath.Join("testdata", "dashboard"), "alerts.mjs")
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			n := startNode(t, nil, "--database", dbtest.URL(t, kind), "--demo", "--addr", "127.0.0.1:0", "--log-format", "json",
				"--http-allow", "127.0.0.1")
			require.NotEmpty(t, n.addr)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, "alerts.mjs", "http://"+n.addr)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "CHROMIUM="+browser)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "the browser run failed:\n%s\ncairn's log:\n%s", out, n.output())
			require.Equal(t, "ok", strings.TrimSpace(string(out)))
			require.Zero(t, n.stop(t), n.output())
		})
	}
}
