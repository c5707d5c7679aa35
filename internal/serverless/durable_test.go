package serverless_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// TestWaitSurvivesARestart starts a workflow that waits, stops its node while it waits, and lets
// another node, which never deployed the document, finish it: the timer is the workflow's next
// activation in the database, and the second node compiles the stored document itself.
func TestWaitSurvivesARestart(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		first := newNode(t, store)
		def := first.deploy(t, `
document: {dsl: '1.0.0', namespace: test, name: nap, version: '1.0.0'}
do:
  - before:
      set: {phase: before}
  - nap:
      wait: PT2S
  - after:
      set: {phase: after, slept: true}
`)
		stop := first.startWorker(t)
		w := first.start(t, def.Type, `{}`)
		w = first.waitFor(t, w.ID, "waiting in nap", func(w *persistence.Workflow) bool {
			return w.State == "/do/1/nap" && w.Status == persistence.StatusInProgress && w.NextActivation != nil && w.NextActivation.After(time.Now())
		})
		stop()

		second := newNode(t, store)
		require.Contains(t, second.engine.Types(workflow.DefaultGroup), def.Type, "a node that did not deploy the type claims it")
		second.startWorker(t)
		w = second.waitEnded(t, w.ID)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.Equal(t, map[string]any{"phase": "after", "slept": true}, output(t, w))
		require.GreaterOrEqual(t, w.Finished.Sub(w.Created), 2*time.Second, "the wait lasted its duration")
	})
}

// TestListenEventBeforeAndAfterWaiting delivers a listened-for event (a signal named by its
// CloudEvent type) once after the workflow waits for it and once before it does.
func TestListenEventBeforeAndAfterWaiting(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: test, name: approval, version: '1.0.0'}
do:
  - pause:
      wait: {milliseconds: 300}
  - approved:
      listen:
        to:
          one:
            with: {type: com.example.approved}
      output: {as: '.[0]'}
  - record:
      set: {approvedBy: '${ .by }'}
`)
		n.startWorker(t)
		ctx := context.Background()

		// After: the workflow waits in the listen task, then the event comes.
		late := n.start(t, def.Type, `{}`)
		n.waitFor(t, late.ID, "waiting for the event", func(w *persistence.Workflow) bool {
			return w.Status == persistence.StatusWaiting && w.State == "/do/1/approved"
		})
		_, err := n.engine.Signal(ctx, workflow.SignalParams{ID: late.ID, Name: "com.example.approved", Payload: json.RawMessage(`{"by":"ann"}`)})
		require.NoError(t, err)
		w := n.waitEnded(t, late.ID)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.Equal(t, map[string]any{"approvedBy": "ann"}, output(t, w))

		// Before: the event (a whole CloudEvent this time) comes while the workflow still waits
		// in its timer; it is kept and consumed when the listen task starts.
		early := n.start(t, def.Type, `{}`)
		_, err = n.engine.Signal(ctx, workflow.SignalParams{ID: early.ID, Name: "com.example.approved",
			Payload: json.RawMessage(`{"specversion":"1.0","id":"1","source":"test","type":"com.example.approved","data":{"by":"bob"}}`)})
		require.NoError(t, err)
		w = n.waitEnded(t, early.ID)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.Equal(t, map[string]any{"approvedBy": "bob"}, output(t, w))
	})
}

// TestForkSurvivesARestart stops the node while a fork's branches wait, and lets another node,
// which never deployed the document, run the branches on and join them in the parent.
func TestForkSurvivesARestart(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		first := newNode(t, store)
		def := first.deploy(t, `
document: {dsl: '1.0.0', namespace: test, name: forknap, version: '1.0.0'}
do:
  - fan:
      fork:
        branches:
          - left:
              do:
                - nap: {wait: PT2S}
                - mark: {set: {side: left}}
          - right:
              do:
                - nap: {wait: PT2S}
                - mark: {set: {side: right}}
`)
		stop := first.startWorker(t)
		w := first.start(t, def.Type, `{}`)
		first.waitFor(t, w.ID, "waiting for its branches", func(w *persistence.Workflow) bool {
			return w.Status == persistence.StatusWaiting && w.State == "/do/0/fan/await"
		})
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			napping := 0
			for _, c := range childrenOf(t, store, w.ID) {
				if c.Status == persistence.StatusInProgress && c.NextActivation != nil && c.NextActivation.After(time.Now()) {
					napping++
				}
			}
			if napping == 2 {
				break // both branches wait in their timers
			}
			require.True(t, time.Now().Before(deadline), "the branches never waited in their timers")
		}
		stop()

		second := newNode(t, store)
		second.startWorker(t)
		w = second.waitEnded(t, w.ID)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.Equal(t, []any{map[string]any{"side": "left"}, map[string]any{"side": "right"}}, output(t, w))
	})
}
