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

// TestDashboardLimitsInChromium runs the real binary with --demo on each backend and drives the
// limits page in Chromium (testdata/dashboard/limits.mjs): a refused limit, a concurrency limit set
// on the page, a key's running and waiting workflows, the waiting one's page saying why it is held
// back, and the limit cleared.
func TestDashboardLimitsInChromium(t *testing.T) {
	t.Parallel()
	browser := nodetest.Chromium(t)
	node, dir := nodetest.Package(t, filepath.Join("testdata", "dashboard"), "limits.mjs", "local.mjs")
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			n := startNode(t, nil, "--database", dbtest.URL(t, kind), "--demo", "--addr", "127.0.0.1:0", "--log-format", "json")
			require.NotEmpty(t, n.addr)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, "limits.mjs", "http://"+n.addr)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "CHROMIUM="+browser)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "the browser run failed:\n%s\ncairn's log:\n%s", out, n.output())
			require.Equal(t, "ok", strings.TrimSpace(string(out)))
			require.Zero(t, n.stop(t), n.output())
		})
	}
}
