package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence/dbtest"
)

// freshPostgresDatabase creates a database of its own on the test PostgreSQL (a pooler routes by
// database name, not by search_path) and returns its URL; it is dropped when the test ends.
func freshPostgresDatabase(t *testing.T) string {
	t.Helper()
	base := dbtest.PostgresURL(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "cairn_pgb_" + hex.EncodeToString(b)
	admin := openStore(t, base)
	ctx := context.Background()
	_, err := admin.DB().ExecContext(ctx, "CREATE DATABASE "+name)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = admin.DB().ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	u, err := url.Parse(base)
	require.NoError(t, err)
	u.Path = "/" + name
	return u.String()
}

// startPgBouncer runs Debian's pgbouncer in transaction mode in front of a database, on a free
// port, and returns the URL that reaches the database through it. PgBouncer refuses to run as
// root: as root it runs as the postgres OS user. Without pgbouncer the test is skipped, except
// under CI=true.
func startPgBouncer(t *testing.T, database string) string {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf("pgbouncer is required under CI=true: "+format, args...)
		}
		t.Skipf("no pgbouncer: "+format, args...)
	}
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		bin = "/usr/sbin/pgbouncer"
		if _, serr := os.Stat(bin); serr != nil {
			unavailable("%v", err)
		}
	}
	u, err := url.Parse(database)
	require.NoError(t, err)
	// Not t.TempDir(): its parent folder is closed to the postgres OS user.
	dir, err := os.MkdirTemp("", "cairn-pgbouncer-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	port := freeLoopbackPort(t)
	dbname := strings.TrimPrefix(u.Path, "/")
	ini := fmt.Sprintf(`[databases]
%s = host=%s port=%s dbname=%s
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = 20
max_client_conn = 500
ignore_startup_parameters = extra_float_digits
logfile = %s
pidfile = %s
`, dbname, u.Hostname(), u.Port(), dbname, port, filepath.Join(dir, "users.txt"), filepath.Join(dir, "pgbouncer.log"), filepath.Join(dir, "pgbouncer.pid"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "users.txt"), []byte(`"postgres" ""`+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pgbouncer.ini"), []byte(ini), 0o644))
	cmd := asPostgresUser(t, dir, unavailable)(bin, filepath.Join(dir, "pgbouncer.ini"))
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	// Its own process group, so that the clean-up ends pgbouncer and not only runuser.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
			t.Logf("pgbouncer's log:\n%s\n%s", log, stderr.String())
		}
	})
	pooled := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", port, dbname)
	waitFor(t, 30*time.Second, "pgbouncer to accept connections", func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	})
	return pooled
}

// Two nodes reach PostgreSQL only through PgBouncer in transaction mode (--pooler transaction):
// they migrate, share 600 orders, and a third node is SIGKILLed mid-load (found dead by its
// expiry, as session locks do not hold behind such a pooler). Everything finishes once, and no
// node logs a prepared-statement or startup-parameter error.
func TestDrillThroughPgBouncer(t *testing.T) {
	t.Parallel()
	direct := freshPostgresDatabase(t)
	pooled := startPgBouncer(t, direct)
	args := append(drillNodeArgs(pooled), "--pooler", "transaction")
	var nodes []*node
	for range 3 {
		nodes = append(nodes, startNode(t, nil, args...))
	}
	victim := nodes[0]
	victimExec := executorOf(t, victim)
	d := newDrill(t, "pgbouncer", direct)
	d.startOrders(t, 600, 300)
	waitFor(t, time.Minute, "the victim to run ship steps", func() bool {
		return d.count(t, "SELECT count(*) FROM workflows WHERE executor_id = ? AND state = 'ship' AND status = 'EXECUTING'", victimExec) >= 3
	})
	require.NoError(t, victim.cmd.Process.Kill())
	<-victim.exited

	d.waitAllFinished(t, 3*time.Minute)
	for _, n := range nodes[1:] {
		requireRunning(t, n)
	}
	d.report(t)
	var sessionLocks int
	require.NoError(t, d.store.DB().NewRaw("SELECT count(*) FROM executors WHERE session_lock").Scan(context.Background(), &sessionLocks))
	require.Zero(t, sessionLocks, "no session locks behind a transaction-mode pooler")
	for _, n := range nodes[1:] {
		require.Zero(t, n.stop(t), n.output())
	}
	for _, n := range nodes {
		out := strings.ToLower(n.output())
		for _, bad := range []string{"prepared statement", "unsupported startup parameter", "sqlstate 08p01"} {
			require.NotContains(t, out, bad, n.output())
		}
	}
}
