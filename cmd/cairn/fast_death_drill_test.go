package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// One of three nodes is SIGKILLed while 200 orders sit in a 2s ship step. The nodes' executors
// expire only after a minute, so the other nodes can learn of the death only from the killed
// node's database session ending (its executor lock freed): the dead executor is declared dead
// well before its expiry, its workflows are recovered, and everything finishes once. The time
// from the kill until every order finished is logged. PostgreSQL and MariaDB, the databases with
// session locks.
func TestDrillKilledNodeDeclaredDeadBySession(t *testing.T) {
	t.Parallel()
	for _, kind := range []persistence.Kind{persistence.KindPostgres, persistence.KindMySQL} {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			url := dbtest.URL(t, kind)
			args := append(drillNodeArgs(url), "--executor-expiry", "60s", "--heartbeat-interval", "500ms")
			var nodes []*node
			for range 3 {
				nodes = append(nodes, startNode(t, nil, args...))
			}
			victim := nodes[0]
			victimExec := executorOf(t, victim)
			d := newDrill(t, "killed-node-session-"+string(kind), url)
			// As many orders as the three nodes have slots (100 each): the other two cannot take
			// them all before the victim's first claim, as they could take 200.
			ps := make([]workflow.StartParams, 300)
			for i := range ps {
				ps[i] = workflow.StartParams{Type: "demo.order", Input: json.RawMessage(`{"shipDelayMs": 2000}`)}
			}
			_, err := d.engine.StartMany(context.Background(), ps)
			require.NoError(t, err)

			waitFor(t, time.Minute, "the victim to run ship steps", func() bool {
				return d.count(t, "SELECT count(*) FROM workflows WHERE executor_id = ? AND state = 'ship' AND status = 'EXECUTING'", victimExec) >= 10
			})
			require.NoError(t, victim.cmd.Process.Kill())
			killed := time.Now()
			<-victim.exited
			held := d.heldBy(t, victimExec)
			require.NotEmpty(t, held, "the killed node held workflows")

			d.waitAllFinished(t, 3*time.Minute)
			took := time.Since(killed)
			for _, n := range nodes[1:] {
				requireRunning(t, n)
			}
			d.report(t)
			var dead persistence.Executor
			require.NoError(t, d.store.DB().NewSelect().Model(&dead).Where("id = ?", victimExec).Scan(context.Background()))
			require.NotNil(t, dead.Stopped, "the killed node's executor was declared dead")
			require.True(t, dead.Stopped.Before(dead.Expires), "declared dead at %s, before its expiry at %s: by its session, not its heartbeat", dead.Stopped, dead.Expires)
			recovered := d.count(t, "SELECT count(DISTINCT workflow_id) FROM actions WHERE type = 'RECOVERY' AND workflow_id IN (?)", bun.List(held))
			require.Equal(t, len(held), recovered, "each workflow the killed node held has a RECOVERY action")
			t.Logf("drill killed-node-session-%s: the killed node held %d workflows; declared dead %s after the kill; every order finished %s after the kill",
				kind, len(held), dead.Stopped.Sub(killed.UTC()).Round(10*time.Millisecond), took.Round(10*time.Millisecond))
			for _, n := range nodes[1:] {
				require.Zero(t, n.stop(t), n.output())
			}
		})
	}
}
