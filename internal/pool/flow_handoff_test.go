package pool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// Under a WORKFLOW limit of 1 per key, the completion that ends a key's holder claims the key's
// next workflow in the same transaction, and the pool runs it at once: with no poll and no wake-up
// after the first claim, two keys' queues of six drain one workflow at a time each, every
// successor handed on (on every backend).
func TestFlowSlotPassesToTheKeysNextWorkflow(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		k := newKeyTracker()
		fc := &workflow.FlowControl{Concurrency: &workflow.Concurrency{Limit: 1, Key: ".customer"}}
		b := setup(t, store, twoSteps("t.handoff", k, fc))
		var ids []int64
		for i := range 12 {
			res, err := b.engine.Start(ctx, workflow.StartParams{Type: "t.handoff",
				Input: json.RawMessage(fmt.Sprintf(`{"customer": "c%d"}`, i%2))})
			require.NoError(t, err)
			ids = append(ids, res.Workflow.ID)
		}
		opts := steadyOptions()
		opts.PollInterval = time.Hour // only the first claim, then the completions
		w := b.startWorker(t, opts)
		for _, id := range ids {
			b.waitStatus(t, id, persistence.StatusFinished)
		}
		k.mu.Lock()
		defer k.mu.Unlock()
		for key, n := range k.most {
			require.Equalf(t, 1, n, "%d workflows of key %q ran at once", n, key)
		}
		require.EqualValues(t, 10, w.Stats().FlowHandedOn.Load(), "each key's five successors are handed on")
	})
}

// A start of a flow-controlled type with a key reaches an idle pool by a hint of its key, which
// claims for that key alone: with no poll, workflows started one after another each run (on every
// backend).
func TestFlowStartHintsItsKey(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		k := newKeyTracker()
		fc := &workflow.FlowControl{Concurrency: &workflow.Concurrency{Limit: 1, Key: ".customer"}}
		b := setup(t, store, twoSteps("t.hint", k, fc))
		opts := steadyOptions()
		opts.PollInterval = time.Hour
		b.startWorker(t, opts)
		for i := range 3 {
			w := b.start(t, "t.hint", fmt.Sprintf(`{"customer": "h%d"}`, i))
			b.waitStatus(t, w.ID, persistence.StatusFinished)
		}
	})
}

// A hint of a started workflow's key is never spent by a claim that read its time before the
// workflow was due: while one key's chain of 300 keeps the pool claiming, 40 workflows of keys of
// their own, started one after another with no poll to fall back on, all run (on every backend).
func TestFlowStartHintsAreNotLostToABusyPool(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		k := newKeyTracker()
		fc := &workflow.FlowControl{Concurrency: &workflow.Concurrency{Limit: 5, Key: ".customer"}}
		b := setup(t, store, twoSteps("t.busy", k, fc))
		var busy []workflow.StartParams
		for range 300 {
			busy = append(busy, workflow.StartParams{Type: "t.busy", Input: json.RawMessage(`{"customer": "big"}`)})
		}
		_, err := b.engine.StartMany(ctx, busy)
		require.NoError(t, err)
		opts := steadyOptions()
		opts.PollInterval = time.Hour
		b.startWorker(t, opts)
		var probes []int64
		for i := range 40 {
			probes = append(probes, b.start(t, "t.busy", fmt.Sprintf(`{"customer": "p%d"}`, i)).ID)
			time.Sleep(3 * time.Millisecond)
		}
		for _, id := range probes {
			b.waitStatus(t, id, persistence.StatusFinished)
		}
	})
}

// A hinted key whose due workflow another transaction holds locked when the claim comes is claimed
// once the lock is gone, however long it is held, with no poll to fall back on: the claim skips the
// locked row (SKIP LOCKED), and the pool claims for the key again, later each time, until it runs.
// SQLite has no row locks (one writer): there the workflow simply runs. On every backend.
func TestFlowHintOfALockedWorkflowIsKeptUntilItRuns(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		k := newKeyTracker()
		fc := &workflow.FlowControl{Concurrency: &workflow.Concurrency{Limit: 1, Key: ".customer"}}
		release := make(chan struct{})
		blocker := workflow.Definition{Type: "t.blocker", States: []workflow.State{
			{Name: "hold", Kind: workflow.Start, Next: []string{"done"}, Handler: func(workflow.StepContext) (workflow.Next, error) {
				<-release
				return workflow.MoveTo("done"), nil
			}},
			{Name: "done", Kind: workflow.End}}}
		b := setup(t, store, twoSteps("t.locked", k, fc), blocker)
		opts := steadyOptions()
		opts.PollInterval = time.Hour
		opts.Concurrency = 1
		b.startWorker(t, opts)
		held := b.start(t, "t.blocker", `{}`)
		b.waitStatus(t, held.ID, persistence.StatusExecuting) // the pool's one slot is taken
		w := b.start(t, "t.locked", `{"customer": "p"}`)      // its hint waits for a free slot
		if store.Kind() != persistence.KindSQLite {
			tx, err := store.DB().BeginTx(ctx, nil)
			require.NoError(t, err)
			var id int64
			require.NoError(t, tx.QueryRowContext(ctx, "SELECT id FROM workflows WHERE id = ? FOR UPDATE", w.ID).Scan(&id))
			close(release) // the slot frees: the claim for the key finds its workflow locked
			time.Sleep(500 * time.Millisecond)
			require.NoError(t, tx.Rollback())
		} else {
			close(release)
		}
		b.waitStatus(t, held.ID, persistence.StatusFinished)
		b.waitStatus(t, w.ID, persistence.StatusFinished)
	})
}

// A key's slot passes on without a bound while the pool has free slots, and at most 16 times in a
// row in a pool that is full: one key's queue of 40 hands every successor on in a pool of 20
// slots, where it used to go back to the claims after every 16 (and so waited for the claim loop,
// however long its other claims took); in a pool of one slot, the claims take it back (on every
// backend).
func TestFlowSlotPassesOnWhileThePoolHasRoom(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		for _, tc := range []struct {
			slots  int
			handed func(n int64) bool
		}{
			{20, func(n int64) bool { return n == 39 }},
			{1, func(n int64) bool { return n > 0 && n < 39 }},
		} {
			fc := &workflow.FlowControl{Concurrency: &workflow.Concurrency{Limit: 1, Key: ".customer"}}
			typ := fmt.Sprintf("t.room%d", tc.slots)
			b := setup(t, store, twoSteps(typ, newKeyTracker(), fc))
			var ws []*persistence.Workflow
			for range 40 {
				ws = append(ws, b.start(t, typ, `{"customer": "c0"}`))
			}
			opts := steadyOptions()
			opts.Concurrency = tc.slots
			opts.PollInterval = time.Hour // no claim but the first, and those for released slots
			w := b.startWorker(t, opts)
			for _, wf := range ws {
				b.waitStatus(t, wf.ID, persistence.StatusFinished)
			}
			handed := w.Stats().FlowHandedOn.Load()
			require.Truef(t, tc.handed(handed), "a pool of %d slots handed on %d of 39 successors", tc.slots, handed)
		}
	})
}
