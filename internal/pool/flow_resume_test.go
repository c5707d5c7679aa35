package pool_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// A workflow brought back by an operator (resumed from PAUSED, retried from FAILED) under a
// WORKFLOW limit of 1 per key waits CREATED for its key's slot while another workflow holds it,
// and runs once the holder ends: it gave its slot up when it stopped, and never runs beside the
// holder (on every backend), whichever node brings it back.
func TestFlowResumedAndRetriedWorkflowsWaitForTheirSlot(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		k := newKeyTracker()
		release := make(chan struct{})
		var mu sync.Mutex
		failed := map[int64]bool{}
		def := workflow.Definition{Type: "t.back", FlowControl: &workflow.FlowControl{Concurrency: &workflow.Concurrency{Limit: 1, Key: ".customer"}},
			States: []workflow.State{
				{Name: "first", Kind: workflow.Start, Next: []string{"done"}, Handler: func(c workflow.StepContext) (workflow.Next, error) {
					var in struct {
						Hold, Fail bool
					}
					_ = c.Input(&in)
					mu.Lock()
					fail := in.Fail && !failed[c.WorkflowID()]
					failed[c.WorkflowID()] = true
					mu.Unlock()
					if fail {
						return workflow.Next{}, workflow.NonRetryable(errors.New("fails once"))
					}
					k.enter(keyOf(c), c.WorkflowID())
					defer k.leave(keyOf(c), c.WorkflowID())
					if in.Hold {
						<-release
					}
					time.Sleep(5 * time.Millisecond)
					return workflow.MoveTo("done"), nil
				}},
				{Name: "done", Kind: workflow.End}, {Name: "broken", Kind: workflow.ErrorKind}}}
		b := setup(t, store, def)
		b.startWorker(t, steadyOptions())
		f := b.start(t, "t.back", `{"customer": "c", "fail": true}`)
		b.waitStatus(t, f.ID, persistence.StatusFailed) // it gave its slot up
		h := b.start(t, "t.back", `{"customer": "c", "hold": true}`)
		b.waitStatus(t, h.ID, persistence.StatusExecuting) // the key's one slot, held
		p := b.start(t, "t.back", `{"customer": "c"}`)
		_, err := b.engine.Pause(ctx, workflow.ChangeParams{ID: p.ID})
		require.NoError(t, err)

		// Resumed by a node that has not read the flow controls yet: it reads them in the resume's
		// own transaction (SQLite has one connection: a read beside it would wait for it).
		cold := setup(t, store, def)
		resumed, err := cold.engine.Resume(ctx, workflow.ChangeParams{ID: p.ID})
		require.NoError(t, err)
		require.Equal(t, persistence.StatusCreated, resumed.Status, "a resumed workflow waits for its slot")
		retried, err := b.engine.Retry(ctx, workflow.RetryParams{ChangeParams: workflow.ChangeParams{ID: f.ID}})
		require.NoError(t, err)
		require.Equal(t, persistence.StatusCreated, retried.Status, "a retried workflow waits for its slot")
		require.NotNil(t, retried.Started, "it ran before: no strategy takes it for a new start")

		time.Sleep(300 * time.Millisecond) // claims come and go while the holder runs
		for _, id := range []int64{p.ID, f.ID} {
			w, err := store.WorkflowGet(ctx, id)
			require.NoError(t, err)
			require.Equal(t, persistence.StatusCreated, w.Status, "workflow %d ran beside the key's holder", id)
		}
		close(release)
		for _, id := range []int64{h.ID, p.ID, f.ID} {
			b.waitStatus(t, id, persistence.StatusFinished)
		}
		k.mu.Lock()
		defer k.mu.Unlock()
		require.Equal(t, 1, k.most["c"], "the key ran more than its limit")
	})
}
