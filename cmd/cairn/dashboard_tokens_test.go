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

// TestDashboardTokensAndSchedules drives the API tokens page and schedule edit/delete in Chromium
// against the real binary with --auth and an admin token.
func TestDashboardTokensAndSchedules(t *testing.T) {
	t.Parallel()
	browser := nodetest.Chromium(t)
	node, dir := nodetest.Package(t, filepath.Join("testdata", "dashboard"), "tokens.mjs")
	db := dbtest.URL(t, dbtest.Backends[0])
	r := runCairn(t, "", nil, "migrate", "up", "--database", db)
	require.Zero(t, r.code, r.stderr)
	r = runCairn(t, "", nil, "token", "create", "--name", "dashboard", "--database", db)
	require.Zero(t, r.code, r.stderr)
	token := strings.TrimSpace(r.stdout)
	n := startNode(t, nil, "--auth", "--database", db, "--demo", "--addr", "127.0.0.1:0", "--log-format", "json")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "tokens.mjs", "http://"+n.addr, token)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CHROMIUM="+browser)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the browser run failed:\n%s\ncairn's log:\n%s", out, n.output())
	require.Equal(t, "ok", strings.TrimSpace(string(out)))
	require.Zero(t, n.stop(t), n.output())
}
