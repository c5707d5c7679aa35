package main

// Fault drills: several `cairn serve` processes on one PostgreSQL, with a node killed, a node
// paused past its expiry, and the database itself restarted, mid-load. Each drill logs
//
//	drill <name>: started=N finished=N lost=N steps_recorded_twice=N
//
// and requires lost == 0 (every workflow FINISHED) and steps_recorded_twice == 0 (no two
// STATE_EXECUTION actions of one workflow leave the same state).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
	"github.com/cairnflow/cairn/workflow/demo"
)

// drillNodeArgs are the flags of a drill's nodes: workers only, JSON logs, and fast polls,
// heartbeats and expiry so a dead node's work moves within seconds.
func drillNodeArgs(url string) []string {
	return []string{"--database", url, "--demo", "--no-api", "--log-format", "json", "--max-conns", "5",
		"--poll-interval", "100ms", "--heartbeat-interval", "200ms", "--executor-expiry", "2s"}
}

// drill is the test's own view of a drill's database: it starts the workflows and checks the
// outcome.
type drill struct {
	name   string
	store  *persistence.Store
	engine *engine.Engine
}

func newDrill(t *testing.T, name, url string) *drill {
	t.Helper()
	ctx := context.Background()
	store := openStore(t, url)
	_, err := store.Migrate(ctx)
	require.NoError(t, err)
	engine := engine.New(store, engine.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, demo.Register(ctx, engine))
	return &drill{name: name, store: store, engine: engine}
}

// startOrders starts n demo.order workflows in batches; every third one ships for shipDelayMs, so
// steps are in flight when the drill strikes.
func (d *drill) startOrders(t *testing.T, n, shipDelayMs int) []int64 {
	t.Helper()
	var ids []int64
	for i := 0; i < n; i += 250 {
		ps := make([]workflow.StartParams, min(250, n-i))
		for j := range ps {
			input := `{}`
			if (i+j)%3 == 0 {
				input = fmt.Sprintf(`{"shipDelayMs": %d}`, shipDelayMs)
			}
			ps[j] = workflow.StartParams{Type: "demo.order", Input: json.RawMessage(input)}
		}
		res, err := d.engine.StartMany(context.Background(), ps)
		require.NoError(t, err)
		for _, r := range res {
			ids = append(ids, r.Workflow.ID)
		}
	}
	return ids
}

// count runs a counting statement, retrying for a while when the database does not answer (it
// may be restarting).
func (d *drill) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	var err error
	for range 100 {
		if err = d.store.DB().NewRaw(query, args...).Scan(context.Background(), &n); err == nil {
			return n
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, err, query)
	return n
}

// waitFor polls cond every 50ms until it holds, for up to timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (d *drill) finished(t *testing.T) int {
	return d.count(t, "SELECT count(*) FROM workflows WHERE status = 'FINISHED'")
}

// waitAllFinished waits until every workflow of the drill is FINISHED (or the timeout passes; the
// report then counts the rest as lost).
func (d *drill) waitAllFinished(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if d.count(t, "SELECT count(*) FROM workflows WHERE status <> 'FINISHED'") == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// report logs the drill's line and requires nothing lost and no step recorded twice.
func (d *drill) report(t *testing.T) {
	t.Helper()
	started := d.count(t, "SELECT count(*) FROM workflows")
	finished := d.finished(t)
	twice := d.count(t, `SELECT count(*) FROM (SELECT workflow_id, from_state FROM actions
		WHERE type = 'STATE_EXECUTION' GROUP BY workflow_id, from_state HAVING count(*) > 1) AS twice`)
	t.Logf("drill %s: started=%d finished=%d lost=%d steps_recorded_twice=%d", d.name, started, finished, started-finished, twice)
	require.Positive(t, started)
	require.Zero(t, started-finished, "lost workflows: %v", d.unfinished(t))
	require.Zero(t, twice, "steps recorded twice")
	steps := d.count(t, "SELECT count(*) FROM actions WHERE type = 'STATE_EXECUTION'")
	require.Equal(t, 3*started, steps, "validate, charge and ship each recorded once per order")
}

// unfinished describes a few workflows that did not finish, for a failure message.
func (d *drill) unfinished(t *testing.T) []string {
	var rows []struct {
		ID         int64
		Status     string
		State      string
		ExecutorID *int64
	}
	_ = d.store.DB().NewRaw("SELECT id, status, state, executor_id FROM workflows WHERE status <> 'FINISHED' ORDER BY id LIMIT 10").
		Scan(context.Background(), &rows)
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%d %s/%s executor=%v", r.ID, r.Status, r.State, r.ExecutorID))
	}
	return out
}

// lockedElsewhere returns those of ids whose rows another session holds locked.
func (d *drill) lockedElsewhere(t *testing.T, ids []int64) []int64 {
	t.Helper()
	var free []int64
	ctx := context.Background()
	tx, err := d.store.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	require.NoError(t, tx.NewRaw("SELECT id FROM workflows WHERE id IN (?) FOR UPDATE SKIP LOCKED", bun.List(ids)).Scan(ctx, &free))
	return slices.DeleteFunc(slices.Clone(ids), func(id int64) bool { return slices.Contains(free, id) })
}

// unrecovered describes the workflows of ids without a RECOVERY action, for a failure message.
func (d *drill) unrecovered(t *testing.T, ids []int64) []string {
	var rows []struct {
		ID         int64
		Status     string
		State      string
		ExecutorID *int64
		Version    int
	}
	_ = d.store.DB().NewRaw(`SELECT id, status, state, executor_id, version FROM workflows WHERE id IN (?)
		AND id NOT IN (SELECT workflow_id FROM actions WHERE type = 'RECOVERY') ORDER BY id LIMIT 10`, bun.List(ids)).
		Scan(context.Background(), &rows)
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%d %s/%s executor=%v version=%d", r.ID, r.Status, r.State, deref(r.ExecutorID), r.Version))
	}
	return out
}

// sessions describes the database sessions other than the test's, for a failure message.
func (d *drill) sessions(t *testing.T) []string {
	var rows []struct {
		State string
		Wait  string
		Query string
	}
	_ = d.store.DB().NewRaw(`SELECT coalesce(state, '') AS state, coalesce(wait_event_type || ':' || wait_event, '') AS wait,
		left(query, 120) AS query FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).
		Scan(context.Background(), &rows)
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprintf("[%s %s] %s", r.State, r.Wait, strings.Join(strings.Fields(r.Query), " ")))
	}
	return out
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// heldBy returns the workflows an executor holds.
func (d *drill) heldBy(t *testing.T, executor int64) []int64 {
	t.Helper()
	var ids []int64
	require.NoError(t, d.store.DB().NewRaw("SELECT id FROM workflows WHERE executor_id = ? ORDER BY id", executor).
		Scan(context.Background(), &ids))
	return ids
}

// executorOf returns the executor a node's worker pool registered as.
func executorOf(t *testing.T, n *node) int64 {
	t.Helper()
	id, ok := n.waitLog(t, "worker started")["executor"].(float64)
	require.True(t, ok, "worker started without an executor id:\n%s", n.output())
	return int64(id)
}

// requireRunning fails when a node has exited: the nodes of a drill must ride through it.
func requireRunning(t *testing.T, n *node) {
	t.Helper()
	select {
	case <-n.exited:
		t.Fatalf("a cairn node exited (status %d) during the drill:\n%s", n.code, n.output())
	default:
	}
}

// Three nodes on one PostgreSQL share 1,000 orders; all finish with each step recorded once.
func TestDrillThreeNodes(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t, persistence.KindPostgres)
	var nodes []*node
	for range 3 {
		nodes = append(nodes, startNode(t, nil, drillNodeArgs(url)...))
	}
	d := newDrill(t, "three-nodes", url)
	d.startOrders(t, 1000, 50)
	d.waitAllFinished(t, 3*time.Minute)
	for _, n := range nodes {
		requireRunning(t, n)
	}
	d.report(t)
	for _, n := range nodes {
		require.Zero(t, n.stop(t), n.output())
	}
	ran := d.count(t, "SELECT count(DISTINCT executor_id) FROM actions")
	require.Greater(t, ran, 1, "the load is shared between the nodes")
}

// One of three nodes is killed with SIGKILL while it runs steps; the others recover its workflows
// (a RECOVERY action each) and everything finishes.
func TestDrillNodeKilled(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t, persistence.KindPostgres)
	var nodes []*node
	for range 3 {
		nodes = append(nodes, startNode(t, nil, drillNodeArgs(url)...))
	}
	victim := nodes[0]
	victimExec := executorOf(t, victim)
	d := newDrill(t, "node-killed", url)
	d.startOrders(t, 1000, 500)

	waitFor(t, time.Minute, "the victim to run ship steps", func() bool {
		return d.count(t, "SELECT count(*) FROM workflows WHERE executor_id = ? AND state = 'ship' AND status = 'EXECUTING'", victimExec) >= 3
	})
	require.NoError(t, victim.cmd.Process.Kill())
	<-victim.exited
	held := d.heldBy(t, victimExec)
	require.NotEmpty(t, held, "the killed node held workflows")
	require.Less(t, d.finished(t), 1000, "the kill came mid-load")

	d.waitAllFinished(t, 3*time.Minute)
	for _, n := range nodes[1:] {
		requireRunning(t, n)
	}
	d.report(t)
	recovered := d.count(t, "SELECT count(DISTINCT workflow_id) FROM actions WHERE type = 'RECOVERY' AND workflow_id IN (?)", bun.List(held))
	t.Logf("drill node-killed: the killed node held %d workflows, %d recovered", len(held), recovered)
	require.Equal(t, len(held), recovered, "each workflow the killed node held has a RECOVERY action")
	for _, n := range nodes[1:] {
		require.Zero(t, n.stop(t), n.output())
	}
}

// A node stopped with SIGSTOP past its expiry is declared dead and its workflows move to the other
// node; resumed with SIGCONT, it finds it was declared dead, registers again, and its late
// completions write nothing over the recovered work.
func TestDrillNodePausedPastExpiry(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t, persistence.KindPostgres)
	paused := startNode(t, nil, drillNodeArgs(url)...)
	pausedExec := executorOf(t, paused)
	other := startNode(t, nil, drillNodeArgs(url)...)
	d := newDrill(t, "node-paused", url)
	d.startOrders(t, 300, 1500)

	waitFor(t, time.Minute, "the node to run ship steps", func() bool {
		return d.count(t, "SELECT count(*) FROM workflows WHERE executor_id = ? AND state = 'ship' AND status = 'EXECUTING'", pausedExec) >= 3
	})
	require.NoError(t, paused.cmd.Process.Signal(syscall.SIGSTOP))
	time.Sleep(100 * time.Millisecond) // the stop is delivered asynchronously
	held := d.heldBy(t, pausedExec)
	require.NotEmpty(t, held)
	// A node stopped inside a completion transaction keeps that transaction's row locks until
	// PostgreSQL ends its idle session (idle_in_transaction_session_timeout, 5s): then those rows
	// are recovered too. Every workflow the paused node held must move.
	locked := d.lockedElsewhere(t, held)
	recoverable := held

	deadline := time.Now().Add(time.Minute)
	for d.count(t, "SELECT count(DISTINCT workflow_id) FROM actions WHERE type = 'RECOVERY' AND workflow_id IN (?)", bun.List(recoverable)) < len(recoverable) {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for the other node to recover the paused node's %d workflows; not recovered: %v; sessions: %v",
				len(recoverable), d.unrecovered(t, recoverable), d.sessions(t))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("drill node-paused: the paused node held %d workflows, all recovered by the other node (%d of them were locked by its open transaction until PostgreSQL ended it)",
		len(held), len(locked))
	// Let the recovered ship steps run again elsewhere before the paused node wakes up.
	time.Sleep(500 * time.Millisecond)
	require.NoError(t, paused.cmd.Process.Signal(syscall.SIGCONT))
	line := paused.waitLog(t, "executor was declared dead; registered again")
	require.EqualValues(t, pausedExec, line["old"])

	d.waitAllFinished(t, 3*time.Minute)
	requireRunning(t, paused)
	requireRunning(t, other)
	d.report(t)
	// The paused node's ship attempts on the recovered workflows stay LOST: its late completions
	// were fenced off.
	overwritten := d.count(t, `SELECT count(*) FROM task_instances WHERE executor_id = ? AND state = 'ship'
		AND workflow_id IN (?) AND status <> 'LOST'`, pausedExec, bun.List(recoverable))
	require.Zero(t, overwritten, "task instances of recovered work written by the paused node")
	recordedByPaused := d.count(t, "SELECT count(*) FROM actions WHERE executor_id = ? AND type = 'STATE_EXECUTION' AND from_state = 'ship' AND workflow_id IN (?)",
		pausedExec, bun.List(recoverable))
	require.Zero(t, recordedByPaused, "ship steps of recovered workflows recorded by the paused node")
	require.Zero(t, paused.stop(t), paused.output())
	require.Zero(t, other.stop(t), other.output())
}

// PostgreSQL itself is restarted mid-load, once shut down cleanly (fast) and once crashed
// (immediate). The nodes ride through the outage and nothing is lost or recorded twice. The drill
// runs its own PostgreSQL cluster, never the shared one the other tests use.
func TestDrillPostgresRestarted(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"fast", "immediate"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			pg := startPrivatePostgres(t)
			var nodes []*node
			for range 2 {
				nodes = append(nodes, startNode(t, nil, drillNodeArgs(pg.url)...))
			}
			d := newDrill(t, "postgres-restarted-"+mode, pg.url)
			d.startOrders(t, 600, 300)
			waitFor(t, time.Minute, "some workflows to finish", func() bool { return d.finished(t) >= 100 })
			require.Less(t, d.finished(t), 600, "the restart comes mid-load")
			pg.restart(t, mode)

			// Work started after the outage runs too.
			waitFor(t, time.Minute, "the database to answer again", func() bool { return d.store.Ping(context.Background()) == nil })
			d.startOrders(t, 100, 0)
			d.waitAllFinished(t, 3*time.Minute)
			for _, n := range nodes {
				requireRunning(t, n)
			}
			d.report(t)
			for _, n := range nodes {
				require.Zero(t, n.stop(t), n.output())
			}
		})
	}
}

// privatePostgres is a PostgreSQL cluster of one test, in a temporary folder on a free port.
type privatePostgres struct {
	bin  string // folder of initdb and pg_ctl
	dir  string
	data string
	url  string
	asPG func(name string, args ...string) *exec.Cmd
}

// startPrivatePostgres initdbs and starts a cluster, stopped and removed when the test ends. The
// binaries refuse to run as root: as root they run as the postgres OS user. Without the binaries
// the test is skipped, except under CI=true.
func startPrivatePostgres(t *testing.T) *privatePostgres {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf("a private PostgreSQL is required under CI=true: "+format, args...)
		}
		t.Skipf("no private PostgreSQL: "+format, args...)
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(found) == 0 {
		unavailable("no /usr/lib/postgresql/*/bin/pg_ctl")
	}
	slices.SortFunc(found, func(a, b string) int { return pgMajor(a) - pgMajor(b) })
	pg := &privatePostgres{bin: filepath.Dir(found[len(found)-1])}

	dir, err := os.MkdirTemp("", "cairn-drill-pg-")
	require.NoError(t, err)
	pg.dir, pg.data = dir, filepath.Join(dir, "data")
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	command := asPostgresUser(t, dir, unavailable)
	pg.asPG = func(name string, args ...string) *exec.Cmd { return command(filepath.Join(pg.bin, name), args...) }
	pg.run(t, "initdb", "-D", pg.data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions")

	port := freeLoopbackPort(t)
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=50", port, dir)
	pg.run(t, "pg_ctl", "-D", pg.data, "-l", filepath.Join(dir, "log"), "-o", opts, "-w", "-t", "60", "start")
	t.Cleanup(func() { _ = pg.asPG("pg_ctl", "-D", pg.data, "-m", "immediate", "-w", "stop").Run() })
	pg.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	return pg
}

// asPostgresUser returns how to run a server program that refuses to run as root (initdb, pg_ctl,
// pgbouncer), with dir, its folder, open to it: as root, as the postgres OS user through runuser;
// otherwise as the test's own user. unavailable skips (or fails, under CI) when that cannot be.
func asPostgresUser(t *testing.T, dir string, unavailable func(format string, args ...any)) func(bin string, args ...string) *exec.Cmd {
	t.Helper()
	if os.Geteuid() != 0 {
		return exec.Command
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		unavailable("running as root and there is no postgres OS user: %v", err)
	}
	runuser, err := exec.LookPath("runuser")
	if err != nil {
		unavailable("running as root and there is no runuser: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.Chown(dir, uid, gid))
	return func(bin string, args ...string) *exec.Cmd {
		return exec.Command(runuser, append([]string{"-u", "postgres", "--", bin}, args...)...)
	}
}

// freeLoopbackPort returns a TCP port of 127.0.0.1 that nothing listens on now, for a server the
// test starts.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

// restart restarts the cluster with a shutdown mode (fast: clean; immediate: a crash, recovered
// on start) and returns once it accepts connections again.
func (pg *privatePostgres) restart(t *testing.T, mode string) {
	t.Helper()
	began := time.Now()
	pg.run(t, "pg_ctl", "-D", pg.data, "-l", filepath.Join(pg.dir, "log"), "-m", mode, "-w", "-t", "60", "restart")
	t.Logf("PostgreSQL restarted (-m %s) in %s", mode, time.Since(began).Round(time.Millisecond))
}

func (pg *privatePostgres) run(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := pg.asPG(name, args...).CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(pg.dir, "log"))
		t.Fatalf("%s %s: %v\n%s\n%s", name, strings.Join(args, " "), err, out, log)
	}
}

// pgMajor is the major version in a /usr/lib/postgresql/<major>/bin path.
func pgMajor(path string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return n
}
