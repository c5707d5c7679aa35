package serverless_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// workflowsOf lists the workflows of a type, oldest first.
func workflowsOf(t *testing.T, store *persistence.Store, typ string) []*persistence.Workflow {
	t.Helper()
	ws, _, err := store.WorkflowList(context.Background(), persistence.WorkflowListParams{Filter: persistence.WorkflowFilter{Types: []string{typ}}, Limit: 100})
	require.NoError(t, err)
	return ws
}

// TestScheduleCronEvery: a document with schedule.every or schedule.cron keeps a cairn schedule
// named as its type: it fires the newest version, pauses like any schedule, takes a new version's
// expression (staying paused) and goes when a version has no schedule.
func TestScheduleCronEvery(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		n.startWorker(t)
		ctx := context.Background()
		doc := func(version, schedule string) string {
			return fmt.Sprintf(`
document: {dsl: '1.0.0', namespace: sched, name: tick, version: '%s'}
%s
do:
  - mark:
      set: {version: '%s'}
`, version, schedule, version)
		}
		def := n.deploy(t, doc("1.0.0", "schedule: {every: PT2S}"))
		sc, err := n.engine.ScheduleByName(ctx, def.Type)
		require.NoError(t, err)
		require.Equal(t, def.Type, sc.DefinitionType)
		require.Equal(t, "@every 2s", sc.Cron)
		require.Equal(t, workflow.OverlapAllow, sc.OverlapPolicy)
		require.NotNil(t, sc.NextFire)

		// Its fire starts a workflow of the type, which runs.
		started, err := n.engine.FireSchedules(ctx, *sc.NextFire)
		require.NoError(t, err)
		require.Equal(t, 1, started)
		ws := workflowsOf(t, store, def.Type)
		require.Len(t, ws, 1)
		w := n.waitEnded(t, ws[0].ID)
		require.Equal(t, map[string]any{"version": "1.0.0"}, output(t, w), lastError(w))

		// Paused, it fires no more.
		sc, err = n.engine.SetSchedulePaused(ctx, sc.ID, true)
		require.NoError(t, err)
		require.Nil(t, sc.NextFire)
		started, err = n.engine.FireSchedules(ctx, time.Now().Add(time.Hour))
		require.NoError(t, err)
		require.Zero(t, started)

		// A new version replaces its expression and keeps it paused; resumed, it runs that version.
		def2 := n.deploy(t, doc("2.0.0", "schedule: {cron: '*/5 * * * *'}"))
		require.Equal(t, 2, def2.Version)
		sc2, err := n.engine.ScheduleByName(ctx, def.Type)
		require.NoError(t, err)
		require.Equal(t, sc.ID, sc2.ID)
		require.Equal(t, "*/5 * * * *", sc2.Cron)
		require.True(t, sc2.Paused)
		sc2, err = n.engine.SetSchedulePaused(ctx, sc2.ID, false)
		require.NoError(t, err)
		require.NotNil(t, sc2.NextFire)
		require.Zero(t, sc2.NextFire.Minute()%5)
		started, err = n.engine.FireSchedules(ctx, *sc2.NextFire)
		require.NoError(t, err)
		require.Equal(t, 1, started)
		ws = workflowsOf(t, store, def.Type)
		require.Len(t, ws, 2)
		for _, x := range ws {
			if x.ID != w.ID {
				w2 := n.waitEnded(t, x.ID)
				require.Equal(t, 2, w2.DefinitionVersion)
				require.Equal(t, map[string]any{"version": "2.0.0"}, output(t, w2), lastError(w2))
			}
		}

		// A version without a schedule deletes it.
		n.deploy(t, doc("3.0.0", ""))
		_, err = n.engine.ScheduleByName(ctx, def.Type)
		require.True(t, errors.Is(err, persistence.ErrNotFound), "%v", err)
	})
}

// TestScheduleAfter: with schedule.after, a workflow that completes starts the next of its type
// (the same input) that long after, and so on; the next one waits, CREATED, until then.
func TestScheduleAfter(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		n.startWorker(t)
		ctx := context.Background()
		def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: sched, name: again, version: '1.0.0'}
schedule: {after: PT1S}
do:
  - count:
      set: {count: '${ .count }'}
`)
		first := n.start(t, def.Type, `{"count": 7}`)
		w1 := n.waitEnded(t, first.ID)
		require.Equal(t, persistence.StatusFinished, w1.Status, lastError(w1))
		var next *persistence.Workflow
		for deadline := time.Now().Add(10 * time.Second); next == nil; {
			for _, w := range workflowsOf(t, store, def.Type) {
				if w.ID != first.ID && (next == nil || w.ID < next.ID) {
					next = w
				}
			}
			require.False(t, time.Now().After(deadline), "no workflow started after the first completed")
			time.Sleep(20 * time.Millisecond)
		}
		require.Nil(t, next.ParentID)
		require.JSONEq(t, `{"count": 7}`, string(next.Input))
		w2 := n.waitEnded(t, next.ID)
		require.Equal(t, map[string]any{"count": float64(7)}, output(t, w2), lastError(w2))
		// It ran no sooner than a second after the first's last step began.
		tis, err := store.TaskInstanceList(ctx, persistence.TaskInstanceListParams{WorkflowIDs: []int64{first.ID}, Page: persistence.PageParams{Limit: 100}})
		require.NoError(t, err)
		require.NotEmpty(t, tis)
		var last time.Time
		for _, ti := range tis {
			if ti.Started.After(last) {
				last = ti.Started
			}
		}
		acts, err := store.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: []int64{next.ID}})
		require.NoError(t, err)
		require.NotEmpty(t, acts)
		require.False(t, acts[0].At.Before(last.Add(time.Second)), "next ran at %v, the first's last step began at %v", acts[0].At, last)
		// The chain goes on: a third is waiting for its time, and is stopped by cancelling it.
		var third *persistence.Workflow
		for deadline := time.Now().Add(10 * time.Second); third == nil; {
			for _, w := range workflowsOf(t, store, def.Type) {
				if w.ID != first.ID && w.ID != next.ID {
					third = w
				}
			}
			require.False(t, time.Now().After(deadline), "no third workflow")
			time.Sleep(20 * time.Millisecond)
		}
		_, err = n.engine.Cancel(ctx, workflow.ChangeParams{ID: third.ID})
		require.NoError(t, err)
	})
}

// TestScheduleOn: schedule.on starts a workflow when publishEvent delivers an event its filters
// match, its input the event; an event no filter matches starts none, and the same event
// published again starts none again.
func TestScheduleOn(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		n.startWorker(t)
		ctx := context.Background()
		def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: sched, name: onevent, version: '1.0.0'}
schedule:
  on: # unquoted, as the spec writes it: a string key in YAML 1.2
    any:
      - with: {type: com.example.order.placed, data: '${ .total > 100 }'}
      - with: {type: com.example.order.rush}
do:
  - take:
      set: {type: '${ .events[0].type }', total: '${ .events[0].data.total }'}
`)
		publish := func(id, typ string, total int) []*persistence.Workflow {
			b, err := json.Marshal(map[string]any{"specversion": "1.0", "id": id, "source": "shop", "type": typ, "data": map[string]any{"total": total}})
			require.NoError(t, err)
			ws, err := n.engine.PublishEvent(ctx, b)
			require.NoError(t, err)
			return ws
		}
		require.Empty(t, publish("e-1", "com.example.order.placed", 50)) // filtered out
		require.Empty(t, publish("e-2", "com.example.order.other", 500)) // another type
		ws := publish("e-3", "com.example.order.placed", 500)
		require.Len(t, ws, 1)
		require.Equal(t, def.Type, ws[0].Type)
		w := n.waitEnded(t, ws[0].ID)
		require.Equal(t, map[string]any{"type": "com.example.order.placed", "total": float64(500)}, output(t, w), lastError(w))
		require.Empty(t, publish("e-3", "com.example.order.placed", 500)) // the same event again
		ws = publish("e-4", "com.example.order.rush", 1)
		require.Len(t, ws, 1)
		w = n.waitEnded(t, ws[0].ID)
		require.Equal(t, map[string]any{"type": "com.example.order.rush", "total": float64(1)}, output(t, w), lastError(w))
		require.Len(t, workflowsOf(t, store, def.Type), 2)
	})
}

// TestScheduleRefused: a schedule cairn cannot keep is refused at deploy at its pointer, and
// nothing is stored.
func TestScheduleRefused(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		for _, c := range []struct{ schedule, ptr string }{
			{`{cron: 'not a cron'}`, "/schedule/cron"},
			{`{cron: '0 0 30 2 *'}`, "/schedule/cron"},
			{`{every: PT0.5S}`, "/schedule/every"},
			{`{every: soon}`, "/schedule/every"},
			{`{after: PT0S}`, "/schedule/after"},
			{`{every: PT1M, cron: '* * * * *'}`, "/schedule"},
			{`{'on': {all: [{with: {type: a}}, {with: {type: b}}]}}`, "/schedule/on/all"},
			{`{'on': {any: []}}`, "/schedule/on/any"},
			{`{'on': {one: {with: {type: a}}, until: '${ true }'}}`, "/schedule/on/until"},
			{`{'on': {one: {with: {type: a}, correlate: {k: {from: .id}}}}}`, "/schedule/on/one/correlate"},
		} {
			_, err := n.engine.Deploy(context.Background(), `
document: {dsl: '1.0.0', namespace: sched, name: bad, version: '1.0.0'}
schedule: `+c.schedule+`
do:
  - x: {set: {a: 1}}
`, "")
			var we *workflow.Error
			require.True(t, errors.As(err, &we), "%s: %v", c.schedule, err)
			require.Equal(t, workflow.CodeInvalidInput, we.Code, c.schedule)
			require.Equal(t, c.ptr, we.Field, "%s: %v", c.schedule, err)
		}
		_, err := n.engine.ScheduleByName(context.Background(), "sched.bad")
		require.True(t, errors.Is(err, persistence.ErrNotFound))
	})
}
