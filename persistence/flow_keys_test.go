package persistence_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// flowRows inserts n workflows of a type and key ("": none) in a status, due an hour ago in
// insertion order.
func flowRows(t *testing.T, store *persistence.Store, typ, key string, status persistence.Status, n int) []*persistence.Workflow {
	t.Helper()
	due := persistence.Now().Add(-time.Hour)
	var ws []*persistence.Workflow
	for i := range n {
		at := due.Add(time.Duration(i) * time.Millisecond)
		w := newWorkflow(typ, status, &at)
		if key != "" {
			w.ConcurrencyKey = &key
		}
		ws = append(ws, w)
	}
	require.NoError(t, store.WorkflowInsertMany(context.Background(), ws))
	return ws
}

func flowClaimant(t *testing.T, store *persistence.Store, limit int) persistence.WorkflowClaimParams {
	t.Helper()
	exec, err := store.ExecutorRegister(context.Background(), persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Hour})
	require.NoError(t, err)
	now := persistence.Now()
	return persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: limit, Now: now, StepDeadline: now.Add(time.Minute)}
}

// A claim for some keys takes as many of each one's oldest due workflows as it has free slots and
// nothing of other keys, however many keys (more than one statement's worth), on every backend.
func TestFlowClaimKeysTakesOnlyTheirKeys(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		var keys []string
		oldest := map[string]int64{}
		for i := range 45 {
			key := fmt.Sprintf("k%02d", i)
			ws := flowRows(t, store, "t.keys", key, persistence.StatusCreated, 2)
			oldest[key] = ws[0].ID
			if i < 40 {
				keys = append(keys, key)
			}
		}
		flowRows(t, store, "t.keys", "k00", persistence.StatusExecuting, 1) // k00 is full
		spec := persistence.FlowSpec{Type: "t.keys", Concurrency: 1}
		res, err := store.WorkflowFlowClaimKeys(ctx, flowClaimant(t, store, 100), spec, keys)
		require.NoError(t, err)
		require.Len(t, res.Claimed, 39, "one of each of the 39 keys with a free slot")
		for _, w := range res.Claimed {
			require.NotEqual(t, "k00", *w.ConcurrencyKey)
			require.Contains(t, keys, *w.ConcurrencyKey)
			require.Equal(t, oldest[*w.ConcurrencyKey], w.ID, "a key's oldest first")
			require.Equal(t, persistence.StatusExecuting, w.Status)
		}
	})
}

// A slot handed on in a completion's transaction goes to the key's oldest due workflow, and never
// beyond the limit: with a limit lowered below the key's holders, an ending holder hands nothing
// on; once under it, one ending holder hands on one slot (on every backend, keyed and keyless).
func TestFlowHandoffKeepsToTheLimit(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		for _, key := range []string{"k", ""} {
			typ := "t.handoff" + key
			holders := flowRows(t, store, typ, key, persistence.StatusExecuting, 3)
			queued := flowRows(t, store, typ, key, persistence.StatusCreated, 3)
			p := flowClaimant(t, store, 10)
			end := func(w *persistence.Workflow, limit int) []*persistence.Workflow {
				_, err := store.DB().NewRaw("UPDATE workflows SET status = 'FINISHED' WHERE id = ?", w.ID).Exec(ctx)
				require.NoError(t, err)
				var got []*persistence.Workflow
				require.NoError(t, store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
					got, err = tx.WorkflowFlowHandoff(ctx, p, persistence.FlowSpec{Type: typ, Concurrency: limit}, map[string]int{key: 1})
					return err
				}))
				return got
			}
			require.Empty(t, end(holders[0], 1), "key %q: two holders left under a limit of 1: nothing handed on", key)
			got := end(holders[1], 2)
			require.Len(t, got, 1, "key %q: one holder left under a limit of 2: one slot handed on", key)
			require.Equal(t, queued[0].ID, got[0].ID)
			require.Equal(t, persistence.StatusExecuting, got[0].Status)
			require.Equal(t, p.ExecutorID, *got[0].ExecutorID)
		}
	})
}

// When a key is full, a flow claim reads candidates key by key: the full key's queue waits, its
// holder whose next step is due runs on in its slot, and another key's workflow is claimed (on
// every backend).
func TestFlowClaimOfAFullKeyRunsItsDueHolder(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		holder := flowRows(t, store, "t.full", "full", persistence.StatusInProgress, 1)[0]
		flowRows(t, store, "t.full", "full", persistence.StatusCreated, 300)
		other := flowRows(t, store, "t.full", "other", persistence.StatusCreated, 1)[0]
		res, err := store.WorkflowFlowClaim(ctx, flowClaimant(t, store, 10), persistence.FlowSpec{Type: "t.full", Concurrency: 1})
		require.NoError(t, err)
		var ids []int64
		for _, w := range res.Claimed {
			ids = append(ids, w.ID)
		}
		require.ElementsMatch(t, []int64{holder.ID, other.ID}, ids)
	})
}

// A claim of every key walks the type's keys at most maxWalkedKeys (512) a claim and asks for
// another (More) until its walks have gone round every key once: with 700 keys all full, a round
// is two claims, and the next round starts again. A claim that walked 512 keys asked for another
// whatever it had walked before, so a pool with more than 512 full keys claimed without end.
func TestFlowClaimWalksEveryKeyOnceARound(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		var ws []*persistence.Workflow
		due := persistence.Now().Add(-time.Hour)
		for i := range 700 {
			key := fmt.Sprintf("k%03d", i)
			for _, status := range []persistence.Status{persistence.StatusExecuting, persistence.StatusCreated} {
				w := newWorkflow("t.round", status, &due)
				w.ConcurrencyKey = &key
				ws = append(ws, w)
			}
		}
		require.NoError(t, store.WorkflowInsertMany(ctx, ws))
		spec := persistence.FlowSpec{Type: "t.round", Concurrency: 1}
		p := flowClaimant(t, store, 100)
		for round := range 2 {
			claims := 0
			for {
				res, err := store.WorkflowFlowClaim(ctx, p, spec)
				require.NoError(t, err)
				require.Empty(t, res.Claimed, "every key is full")
				claims++
				if !res.More {
					break
				}
				require.Less(t, claims, 5, "round %d does not end", round)
			}
			require.Equal(t, 2, claims, "round %d walks 700 keys in two claims", round)
		}
	})
}
