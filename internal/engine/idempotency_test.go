package engine_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// The same idempotency key with another request is refused: answering it with the first request's
// result would tell the client its (different) request was done.
func TestIdempotencyKeyWithAnotherRequestIsAConflict(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		first, err := engine.Start(ctx, workflow.StartParams{Type: "demo.order", Input: json.RawMessage(`{"a": 1, "b": [1, 2]}`), IdempotencyKey: "k"})
		require.NoError(t, err)
		require.True(t, first.Created)

		again, err := engine.Start(ctx, workflow.StartParams{Type: "demo.order", Input: json.RawMessage(`{"b":[1,2],"a":1}`), IdempotencyKey: "k"})
		require.NoError(t, err, "the same request, spelled otherwise, replays")
		require.False(t, again.Created)
		require.Equal(t, first.Workflow.ID, again.Workflow.ID)

		_, err = engine.Start(ctx, workflow.StartParams{Type: "demo.approval", Input: json.RawMessage(`{"a": 1, "b": [1, 2]}`), IdempotencyKey: "k"})
		requireCode(t, err, workflow.CodeConflict, "idempotencyKey")
		_, err = engine.Start(ctx, workflow.StartParams{Type: "demo.order", Input: json.RawMessage(`{"a": 2}`), IdempotencyKey: "k"})
		requireCode(t, err, workflow.CodeConflict, "idempotencyKey")
		_, err = engine.StartMany(ctx, []workflow.StartParams{{Type: "demo.order"}, {Type: "demo.order", Priority: 5, IdempotencyKey: "k"}})
		requireCode(t, err, workflow.CodeConflict, "workflows[1].idempotencyKey")
		n, err := store.WorkflowCount(ctx, persistence.WorkflowFilter{})
		require.NoError(t, err)
		require.Equal(t, 1, n, "refused starts start nothing")

		id := first.Workflow.ID
		_, err = engine.Pause(ctx, workflow.ChangeParams{ID: id, Reason: "maintenance", IdempotencyKey: "p"})
		require.NoError(t, err)
		_, err = engine.Pause(ctx, workflow.ChangeParams{ID: id, Reason: "maintenance", IdempotencyKey: "p"})
		require.NoError(t, err)
		_, err = engine.Pause(ctx, workflow.ChangeParams{ID: id, Reason: "something else", IdempotencyKey: "p"})
		requireCode(t, err, workflow.CodeConflict, "idempotencyKey")

		_, err = engine.Signal(ctx, workflow.SignalParams{ID: id, Name: "approve", Payload: json.RawMessage(`{"by": "ann"}`), IdempotencyKey: "s"})
		require.NoError(t, err)
		_, err = engine.Signal(ctx, workflow.SignalParams{ID: id, Name: "approve", Payload: json.RawMessage(`{"by":"ann"}`), IdempotencyKey: "s"})
		require.NoError(t, err)
		_, err = engine.Signal(ctx, workflow.SignalParams{ID: id, Name: "reject", Payload: json.RawMessage(`{"by": "ann"}`), IdempotencyKey: "s"})
		requireCode(t, err, workflow.CodeConflict, "idempotencyKey")
		_, err = engine.Signal(ctx, workflow.SignalParams{ID: id, Name: "approve", Payload: json.RawMessage(`{"by": "bob"}`), IdempotencyKey: "s"})
		requireCode(t, err, workflow.CodeConflict, "idempotencyKey")
		sigs, err := store.SignalList(ctx, []int64{id})
		require.NoError(t, err)
		require.Len(t, sigs, 1)
	})
}

// The same key twice in one bulk start: the second replays the first.
func TestIdempotencyKeyTwiceInOneStartMany(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		res, err := engine.StartMany(ctx, []workflow.StartParams{
			{Type: "demo.order", IdempotencyKey: "k"},
			{Type: "bench.noop"},
			{Type: "demo.order", IdempotencyKey: "k"},
		})
		require.NoError(t, err)
		require.Len(t, res, 3)
		require.True(t, res[0].Created)
		require.False(t, res[2].Created)
		require.Equal(t, res[0].Workflow.ID, res[2].Workflow.ID)
		n, err := store.WorkflowCount(ctx, persistence.WorkflowFilter{})
		require.NoError(t, err)
		require.Equal(t, 2, n)

		_, err = engine.StartMany(ctx, []workflow.StartParams{
			{Type: "demo.order", IdempotencyKey: "k2"},
			{Type: "bench.noop", IdempotencyKey: "k2"},
		})
		requireCode(t, err, workflow.CodeConflict, "workflows[1].idempotencyKey")
		n, err = store.WorkflowCount(ctx, persistence.WorkflowFilter{})
		require.NoError(t, err)
		require.Equal(t, 2, n, "a refused call starts nothing")
	})
}

// Concurrent requests with one key all get the first one's result: none sees a CONFLICT.
func TestConcurrentOperationsWithOneKeyAllReplay(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		res, err := engine.Start(ctx, workflow.StartParams{Type: "demo.approval"})
		require.NoError(t, err)
		id := res.Workflow.ID

		const n = 30
		errs := make([]error, 2*n)
		statuses := make([]persistence.Status, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(2)
			go func() {
				defer wg.Done()
				w, err := engine.Pause(ctx, workflow.ChangeParams{ID: id, Reason: "hold", IdempotencyKey: "pause-1"})
				errs[i] = err
				if err == nil {
					statuses[i] = w.Status
				}
			}()
			go func() {
				defer wg.Done()
				_, errs[n+i] = engine.Signal(ctx, workflow.SignalParams{ID: id, Name: "approve", IdempotencyKey: "signal-1"})
			}()
		}
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "request %d", i)
		}
		for _, s := range statuses {
			require.Equal(t, persistence.StatusPaused, s)
		}
		actions, err := store.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: []int64{id}})
		require.NoError(t, err)
		require.Len(t, actions, 1, "one pause")
		sigs, err := store.SignalList(ctx, []int64{id})
		require.NoError(t, err)
		require.Len(t, sigs, 1, "one signal")
	})
}
