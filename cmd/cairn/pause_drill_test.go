package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// Two nodes on one PostgreSQL run orders whose ship step takes a while; the operator pauses and at
// once resumes the orders shipping, several times over. No two attempts of one workflow ever
// overlap (on one node or across both), nothing is LOST, every order finishes with each step
// recorded once.
func TestDrillPauseResumeWhileShipping(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t, persistence.KindPostgres)
	// A generous expiry: this drill is about pause and resume, not about nodes declared dead on a
	// loaded machine.
	args := append(drillNodeArgs(url), "--executor-expiry", "10s")
	a := startNode(t, nil, args...)
	b := startNode(t, nil, args...)
	d := newDrill(t, "pause-resume", url)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.engine.Notifier().Run(ctx) // carries the pause's cancel hint to the nodes

	ids := d.startOrders(t, 60, 800)
	var shipping []int64
	for round := range 4 {
		waitFor(t, time.Minute, "orders shipping", func() bool {
			require.NoError(t, d.store.DB().NewRaw("SELECT id FROM workflows WHERE state = 'ship' AND status = 'EXECUTING' ORDER BY id").
				Scan(ctx, &shipping))
			return len(shipping) > 0 || round > 0
		})
		for _, id := range shipping {
			if _, err := d.engine.Pause(ctx, workflow.ChangeParams{ID: id}); err != nil {
				require.Equal(t, workflow.CodeConflict, workflow.CodeOf(err), "%v", err) // it finished meanwhile
				continue
			}
			_, err := d.engine.Resume(ctx, workflow.ChangeParams{ID: id})
			require.NoError(t, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	d.waitAllFinished(t, 2*time.Minute)
	requireRunning(t, a)
	requireRunning(t, b)
	d.report(t)

	lost := d.count(t, "SELECT count(*) FROM task_instances WHERE status = 'LOST' AND workflow_id IN (?)", bun.List(ids))
	require.Zero(t, lost, "attempts recovered as lost")
	overlapping := d.count(t, `SELECT count(*) FROM task_instances AS x JOIN task_instances AS y
		ON x.workflow_id = y.workflow_id AND x.id < y.id AND y.started < x.finished AND x.started < y.finished`)
	cancelled := d.count(t, "SELECT count(*) FROM task_instances WHERE status = 'CANCELLED'")
	t.Logf("drill pause-resume: %d cancelled attempts, %d overlapping", cancelled, overlapping)
	require.Positive(t, cancelled, "pausing running steps cancelled them")
	require.Zero(t, overlapping, "two attempts of one workflow ran at once")
	require.Zero(t, a.stop(t), a.output())
	require.Zero(t, b.stop(t), b.output())
}
