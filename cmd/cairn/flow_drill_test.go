package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// Three nodes on one PostgreSQL share 600 orders of 20 customers under a run-time concurrency
// limit of 2 per customer; one node is SIGKILLed mid-run. Sampled in the database all along, no
// customer ever has more than 2 orders holding a slot (claimed and not ended), and every order
// finishes with each step recorded once.
func TestDrillFlowControlNodeKilled(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t, persistence.KindPostgres)
	d := newDrill(t, "flow-control-node-killed", url)
	ctx := context.Background()
	const limit = 2
	_, err := d.engine.SetFlowControl(ctx, "demo.order", workflow.FlowControl{
		Concurrency: &workflow.Concurrency{Limit: limit, Key: ".customer"}}, "drill")
	require.NoError(t, err)
	// The victim starts first and takes slots before the others run: a node hands a key's slot on
	// to the key's next workflow itself (up to 16 in a row), so the first claims decide who holds
	// most keys for a while.
	victim := startNode(t, nil, drillNodeArgs(url)...)
	victimExec := executorOf(t, victim)
	nodes := []*node{victim}

	// The sampler reads every key's holders in one statement (one snapshot) until the drill ends.
	var mu sync.Mutex
	most, samples := 0, 0
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			var n []int
			err := d.store.DB().NewRaw(`SELECT count(*) FROM workflows WHERE type = 'demo.order'
				AND status IN ('IN_PROGRESS', 'EXECUTING', 'WAITING') GROUP BY concurrency_key`).Scan(ctx, &n)
			if err != nil {
				continue
			}
			mu.Lock()
			samples++
			for _, c := range n {
				most = max(most, c)
			}
			mu.Unlock()
		}
	}()

	ps := make([]workflow.StartParams, 600)
	for i := range ps {
		ps[i] = workflow.StartParams{Type: "demo.order",
			Input: json.RawMessage(fmt.Sprintf(`{"customer": "c%d", "shipDelayMs": %d}`, i%20, 100*(i%3)))}
	}
	res, err := d.engine.StartMany(ctx, ps)
	require.NoError(t, err)
	require.Equal(t, "c0", *res[0].Workflow.ConcurrencyKey)

	waitFor(t, time.Minute, "the victim to run ship steps", func() bool {
		return d.count(t, "SELECT count(*) FROM workflows WHERE executor_id = ? AND state = 'ship' AND status = 'EXECUTING'", victimExec) >= 1
	})
	for range 2 {
		nodes = append(nodes, startNode(t, nil, drillNodeArgs(url)...))
	}
	for _, n := range nodes[1:] {
		executorOf(t, n) // running and claiming beside the victim before it dies
	}
	require.NoError(t, victim.cmd.Process.Kill())
	<-victim.exited
	held := d.heldBy(t, victimExec)
	require.Less(t, d.finished(t), 600, "the kill came mid-load")

	d.waitAllFinished(t, 3*time.Minute)
	close(stop)
	<-sampled
	for _, n := range nodes[1:] {
		requireRunning(t, n)
	}
	d.report(t)
	mu.Lock()
	t.Logf("drill flow-control-node-killed: the killed node held %d workflows; %d samples, at most %d holders of one key (limit %d)",
		len(held), samples, most, limit)
	require.Positive(t, samples)
	require.LessOrEqual(t, most, limit, "a customer had more orders holding a slot than its limit")
	mu.Unlock()
	for _, n := range nodes[1:] {
		require.Zero(t, n.stop(t), n.output())
	}
}
