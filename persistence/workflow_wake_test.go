package persistence_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// A wake-up that claims takes, per claim, at most its limit of the woken workflows of its group
// and types that no attempt holds, leaves them as a claim would (EXECUTING by its executor, one
// version more, its step deadline, due now) and returns them as stored; the others are woken as
// before, and a stopped executor's claim takes none.
func TestWorkflowWakeAndClaim(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		now := persistence.Now()
		exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Minute})
		require.NoError(t, err)
		other, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 2, Group: "default", Expiry: time.Minute})
		require.NoError(t, err)

		a := newWorkflow("t", persistence.StatusWaiting, nil)
		b := newWorkflow("t", persistence.StatusWaiting, nil)
		c := newWorkflow("t", persistence.StatusWaiting, nil)
		held := newWorkflow("t", persistence.StatusWaiting, nil) // an attempt of it still runs
		held.ExecutorID = &other.ID
		untyped := newWorkflow("u", persistence.StatusWaiting, nil)
		grouped := newWorkflow("t", persistence.StatusWaiting, nil)
		grouped.ExecutorGroup = "gpu"
		running := newWorkflow("t", persistence.StatusInProgress, &now) // not waiting: not woken
		all := []*persistence.Workflow{a, b, c, held, untyped, grouped, running}
		require.NoError(t, store.WorkflowInsertMany(ctx, all))
		ids := make([]int64, len(all))
		for i, w := range all {
			ids[i] = w.ID
		}

		claim := persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: 2, Now: now,
			StepDeadline: now.Add(time.Minute), Types: []string{"t"}}
		var woken []int64
		var claimed []*persistence.Workflow
		require.NoError(t, store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
			var err error
			woken, claimed, err = tx.WorkflowWakeAndClaim(ctx, persistence.WorkflowWakeParams{IDs: ids, Now: now},
				[]persistence.WorkflowClaimParams{claim})
			return err
		}))
		require.ElementsMatch(t, []int64{a.ID, b.ID, c.ID, held.ID, untyped.ID, grouped.ID}, woken)
		require.Len(t, claimed, 2, "at most the claim's limit")
		for _, w := range claimed {
			require.Contains(t, []int64{a.ID, b.ID, c.ID}, w.ID, "of its group and types, held by no attempt")
			require.Equal(t, persistence.StatusExecuting, w.Status)
			require.Equal(t, exec.ID, *w.ExecutorID)
			require.Equal(t, 1, w.Version)
			require.WithinDuration(t, now.Add(time.Minute), *w.StepDeadline, time.Millisecond)
			stored, err := store.WorkflowGet(ctx, w.ID)
			require.NoError(t, err)
			require.JSONEq(t, string(must(json.Marshal(stored))), string(must(json.Marshal(w))), "a claim returns the row as it stored it (times in any location)")
		}
		for _, id := range woken {
			w, err := store.WorkflowGet(ctx, id)
			require.NoError(t, err)
			if w.Status == persistence.StatusExecuting {
				continue
			}
			require.Equal(t, persistence.StatusInProgress, w.Status, "woken, due for any claim")
			require.Equal(t, 1, w.Version)
			require.WithinDuration(t, now, *w.NextActivation, time.Millisecond)
			if id == held.ID {
				require.Equal(t, other.ID, *w.ExecutorID, "still held by its attempt")
			} else {
				require.Nil(t, w.ExecutorID)
			}
		}

		// A stopped executor claims nothing: the workflows are woken all the same.
		more := []*persistence.Workflow{newWorkflow("t", persistence.StatusWaiting, nil), newWorkflow("t", persistence.StatusWaiting, nil)}
		require.NoError(t, store.WorkflowInsertMany(ctx, more))
		require.NoError(t, store.ExecutorStop(ctx, exec.ID))
		require.NoError(t, store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
			var err error
			woken, claimed, err = tx.WorkflowWakeAndClaim(ctx, persistence.WorkflowWakeParams{IDs: []int64{more[0].ID, more[1].ID}, Now: now},
				[]persistence.WorkflowClaimParams{claim})
			return err
		}))
		require.Len(t, woken, 2)
		require.Empty(t, claimed)
		for _, w := range more {
			got, err := store.WorkflowGet(ctx, w.ID)
			require.NoError(t, err)
			require.Equal(t, persistence.StatusInProgress, got.Status)
			require.Nil(t, got.ExecutorID)
		}
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
