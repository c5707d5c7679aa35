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

// TestDashboardOperationsInChromium runs the real binary with --demo on each backend and drives
// the bulk operations and audit log pages in Chromium (testdata/dashboard/operations.mjs): an
// action on every workflow matching the list's filter, confirmed on its dry run's count, followed
// to its end; the list of operations; an operation's failures; the audit log filtered by actor.
func TestDashboardOperationsInChromium(t *testing.T) {
	t.Parallel()
	browser := nodetest.Chromium(t)
	node, dir := nodetest.Package(t, filepath.Join("testdata", "dashboard"), "operations.mjs", "local.mjs")
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			n := startNode(t, nil, "--database", dbtest.URL(t, kind), "--demo", "--addr", "127.0.0.1:0", "--log-format", "json")
			require.NotEmpty(t, n.addr)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, "operations.mjs", "http://"+n.addr)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "CHROMIUM="+browser)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "the browser run failed:\n%s\ncairn's log:\n%s", out, n.output())
			require.Equal(t, "ok", strings.TrimSpace(string(out)))
		})
	}
}
