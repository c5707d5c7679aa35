package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/cairnflow/cairn/workflow"
)

// startStandby makes a streaming-replication standby of a private primary (pg_basebackup -R),
// starts it on a free port, and makes it the primary's synchronous standby: a commit the primary
// acknowledges is on the standby too. It returns the standby, stopped when the test ends.
func startStandby(t *testing.T, primary *privatePostgres) *privatePostgres {
	t.Helper()
	u, err := url.Parse(primary.url)
	require.NoError(t, err)
	standby := &privatePostgres{bin: primary.bin, dir: primary.dir, data: filepath.Join(primary.dir, "standby"), asPG: primary.asPG}
	primary.run(t, "pg_basebackup", "-h", u.Hostname(), "-p", u.Port(), "-U", "postgres", "-D", standby.data, "-R", "-X", "stream", "--no-sync")

	port := freeLoopbackPort(t)
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=50", port, primary.dir)
	standby.run(t, "pg_ctl", "-D", standby.data, "-l", filepath.Join(primary.dir, "standby.log"), "-o", opts, "-w", "-t", "60", "start")
	t.Cleanup(func() { _ = standby.asPG("pg_ctl", "-D", standby.data, "-m", "immediate", "-w", "stop").Run() })
	standby.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)

	admin := openStore(t, primary.url)
	ctx := context.Background()
	for _, stmt := range []string{"ALTER SYSTEM SET synchronous_standby_names = '*'", "SELECT pg_reload_conf()"} {
		_, err := admin.DB().ExecContext(ctx, stmt)
		require.NoError(t, err)
	}
	waitFor(t, time.Minute, "the standby to replicate synchronously", func() bool {
		var n int
		_ = admin.DB().NewRaw("SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'").Scan(ctx, &n)
		return n == 1
	})
	return standby
}

// hostPort is the host:port of a private cluster's URL.
func (pg *privatePostgres) hostPort(t *testing.T) string {
	u, err := url.Parse(pg.url)
	require.NoError(t, err)
	return u.Host
}

// Failover: a primary with a synchronous standby, two nodes on a multi-host URL that asks for the
// read-write server, orders running and being started. The primary crashes (immediate stop) and
// the standby is promoted. Every start the database acknowledged finishes, no step is recorded
// twice, the nodes' wake-up listeners reconnect to the new primary, a schedule fires again, and
// the time until starts work again is logged.
func TestDrillFailoverToStandby(t *testing.T) {
	t.Parallel()
	primary := startPrivatePostgres(t)
	standby := startStandby(t, primary)
	multi := fmt.Sprintf("postgres://postgres@%s,%s/postgres?sslmode=disable&target_session_attrs=read-write&connect_timeout=2",
		primary.hostPort(t), standby.hostPort(t))

	var nodes []*node
	for range 2 {
		nodes = append(nodes, startNode(t, nil, drillNodeArgs(multi)...))
	}
	d := newDrill(t, "failover", multi)
	ctx := context.Background()
	schedule, err := d.engine.CreateSchedule(ctx, workflow.ScheduleParams{Cron: "@every 1s", Type: "demo.order", Input: json.RawMessage(`{}`)})
	require.NoError(t, err)
	d.startOrders(t, 300, 300)
	waitFor(t, time.Minute, "some orders to finish", func() bool { return d.finished(t) >= 50 })

	// A starter keeps starting orders one at a time through the failover and keeps the IDs the
	// database acknowledged.
	var (
		mu           sync.Mutex
		acknowledged []int64
		firstAfter   time.Time
	)
	crashed := make(chan time.Time, 1)
	stop := make(chan struct{})
	var starter sync.WaitGroup
	starter.Go(func() {
		var crash time.Time
		for {
			select {
			case <-stop:
				return
			case crash = <-crashed:
			default:
			}
			began := time.Now()
			sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			res, err := d.engine.Start(sctx, workflow.StartParams{Type: "demo.order", Input: json.RawMessage(`{}`)})
			cancel()
			if err == nil {
				mu.Lock()
				acknowledged = append(acknowledged, res.Workflow.ID)
				if !crash.IsZero() && began.After(crash) && firstAfter.IsZero() {
					firstAfter = time.Now()
				}
				mu.Unlock()
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	time.Sleep(500 * time.Millisecond)
	primary.run(t, "pg_ctl", "-D", primary.data, "-m", "immediate", "-w", "stop")
	crash := time.Now() // the primary is gone: a start that begins from here cannot commit on it
	crashed <- crash
	standby.run(t, "pg_ctl", "-D", standby.data, "-w", "-t", "60", "promote")
	promoted := time.Since(crash)

	waitFor(t, time.Minute, "starts to work again", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return !firstAfter.IsZero()
	})
	time.Sleep(time.Second)
	close(stop)
	starter.Wait()

	waitFor(t, 30*time.Second, "the schedule to fire on the new primary", func() bool {
		return d.count(t, "SELECT count(*) FROM schedules WHERE last_fire > ?", crash.Add(promoted).UTC()) == 1
	})
	_, err = d.engine.SetSchedulePaused(ctx, schedule.ID, true)
	require.NoError(t, err)
	d.waitAllFinished(t, 3*time.Minute)
	for _, n := range nodes {
		requireRunning(t, n)
	}
	mu.Lock()
	acked := acknowledged
	again := firstAfter.Sub(crash)
	mu.Unlock()
	missing := d.count(t, "SELECT ? - count(*) FROM workflows WHERE id IN (?) AND status = 'FINISHED'", len(acked), bun.List(acked))
	require.Zero(t, missing, "acknowledged starts that did not finish on the new primary")
	d.report(t)

	waitFor(t, 30*time.Second, "both nodes to listen for wake-ups on the new primary", func() bool {
		return d.count(t, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %'") >= 2
	})
	t.Logf("drill failover: promoted %s after the crash; starts worked again %s after the crash; %d starts acknowledged during the drill, all finished",
		promoted.Round(10*time.Millisecond), again.Round(10*time.Millisecond), len(acked))
	for _, n := range nodes {
		require.Zero(t, n.stop(t), n.output())
	}
}
