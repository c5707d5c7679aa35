package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/nodetest"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// dashboardTools installs the browser test's npm packages (testdata/dashboard, with npm ci from
// its lock file) into a temporary folder and returns node, that folder and the browser. Without
// node, npm or Chromium the test skips, and fails under CI=true.
func dashboardTools(t *testing.T) (node, dir, browser string) {
	t.Helper()
	browser = nodetest.Chromium(t)
	node, dir = nodetest.Package(t, filepath.Join("testdata", "dashboard"), "dashboard.mjs", "local.mjs")
	return node, dir, browser
}

// TestDashboardInChromium runs the real binary with --demo on each backend and drives its
// dashboard in Chromium through the list, a live update, a workflow's page, cancel, retry of a
// MANUAL workflow, a refused operation, a bulk pause, counts above --exact-count-up-to shown as
// estimates, and a remote worker on its page after it polled (testdata/dashboard/dashboard.mjs). The
// script fails when any request leaves the machine. It measures the first render of the
// workflows page and how long an event takes to reach the open page; they are logged, never
// asserted (the machine running the test decides them).
func TestDashboardInChromium(t *testing.T) {
	t.Parallel()
	node, dir, browser := dashboardTools(t)
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			n := startNode(t, nil, "--database", dbtest.URL(t, kind), "--demo", "--addr", "127.0.0.1:0", "--log-format", "json",
				"--exact-count-up-to", "100")
			require.NotEmpty(t, n.addr)

			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			args := []string{"dashboard.mjs", "http://" + n.addr}
			if shots := os.Getenv("CAIRN_UI_SCREENSHOTS"); shots != "" && kind == dbtest.Backends[0] {
				args = append(args, shots) // to refresh the README's screenshots
			}
			cmd := exec.CommandContext(ctx, node, args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "CHROMIUM="+browser, fmt.Sprintf("CAIRN_COUNT_ESTIMATES=%t", kind != persistence.KindSQLite))
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "the browser run failed:\n%s\ncairn's log:\n%s", out, n.output())

			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			require.Equal(t, "ok", lines[len(lines)-1], "%s", out)
			sc := bufio.NewScanner(strings.NewReader(string(out)))
			for sc.Scan() {
				var m struct {
					Measure string
					Value   float64
					Unit    string
				}
				if json.Unmarshal(sc.Bytes(), &m) == nil && m.Measure != "" {
					t.Logf("dashboard on %s: %s = %g %s", kind, m.Measure, m.Value, m.Unit)
				}
			}
			require.Zero(t, n.stop(t), n.output())
		})
	}
}
