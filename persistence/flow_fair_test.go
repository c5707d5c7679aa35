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

// A flow claim serves keys in turn: a key with a long queue of older workflows does not hold back
// the first step of another key's newer workflow, and one claim takes one workflow of each key
// before a second of any; successive claims go round the keys (on every backend).
func TestFlowClaimServesKeysInTurn(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		now := persistence.Now()
		exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Hour})
		require.NoError(t, err)
		keyed := func(typ, key string, due time.Time) *persistence.Workflow {
			w := newWorkflow(typ, persistence.StatusCreated, &due)
			w.ConcurrencyKey = &key
			return w
		}
		// 400 queued under "big", the oldest; then one workflow of "small".
		var ws []*persistence.Workflow
		for i := range 400 {
			ws = append(ws, keyed("t.fair", "big", now.Add(-time.Hour+time.Duration(i)*time.Millisecond)))
		}
		small := keyed("t.fair", "small", now.Add(-time.Minute))
		ws = append(ws, small)
		require.NoError(t, store.WorkflowInsertMany(ctx, ws))
		params := persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: 4, Now: now,
			StepDeadline: now.Add(time.Minute)}
		spec := persistence.FlowSpec{Type: "t.fair", Concurrency: 1000, StepScope: true}
		res, err := store.WorkflowFlowClaim(ctx, params, spec)
		require.NoError(t, err)
		require.Len(t, res.Claimed, 4)
		var ids []int64
		for _, w := range res.Claimed {
			ids = append(ids, w.ID)
		}
		require.Contains(t, ids, small.ID, "the other key's workflow is served in the first claim, not after the 400 before it")

		// Twelve keys of 30 queued each, the keys' workflows in the order k00's, k01's, ...: a claim
		// of 6 takes six keys' oldest, the next claim six other keys'.
		ws = nil
		for k := range 12 {
			for i := range 30 {
				ws = append(ws, keyed("t.turns", fmt.Sprintf("k%02d", k), now.Add(-time.Hour+time.Duration(k*30+i)*time.Millisecond)))
			}
		}
		require.NoError(t, store.WorkflowInsertMany(ctx, ws))
		spec.Type, params.Limit = "t.turns", 6
		seen := map[string]int{}
		for range 2 {
			res, err = store.WorkflowFlowClaim(ctx, params, spec)
			require.NoError(t, err)
			require.Len(t, res.Claimed, 6)
			for _, w := range res.Claimed {
				seen[*w.ConcurrencyKey]++
			}
		}
		require.Len(t, seen, 12, "two claims of six serve twelve keys once each: %v", seen)
	})
}

// A claim of a type with a concurrency limit per key, whose queue spans more keys than the oldest
// due workflows it reads, says there is more, and claims that go on while it says so run every
// key: the first claim alone ran about a hundred keys of 300 (a page of 64 oldest and 32 more), and
// the pool claimed again only at its next poll, so that 1,000 keys of limit 1 ran about 64 at a
// time (on every backend).
func TestFlowClaimGoesOnPastAFullReadOfManyKeys(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		params := flowClaimant(t, store, 2000)
		var ws []*persistence.Workflow
		for i := range 600 { // keys in turn, as a bench's: k000, k001, ..., k299, k000, ...
			due := params.Now.Add(-time.Hour + time.Duration(i)*time.Millisecond)
			w := newWorkflow("t.many", persistence.StatusCreated, &due)
			key := fmt.Sprintf("k%03d", i%300)
			w.ConcurrencyKey = &key
			ws = append(ws, w)
		}
		require.NoError(t, store.WorkflowInsertMany(ctx, ws))
		spec := persistence.FlowSpec{Type: "t.many", Concurrency: 1}
		running := map[string]int{}
		res, err := store.WorkflowFlowClaim(ctx, params, spec)
		require.NoError(t, err)
		require.NotEmpty(t, res.Claimed)
		require.Less(t, len(res.Claimed), 300, "one claim reads a page of the oldest, not every key")
		require.True(t, res.More, "a full read: more keys may have free slots")
		for claims := 1; ; claims++ {
			for _, w := range res.Claimed {
				running[*w.ConcurrencyKey]++
			}
			if !res.More {
				break
			}
			require.Less(t, claims, 10, "claims that go on end")
			res, err = store.WorkflowFlowClaim(ctx, params, spec)
			require.NoError(t, err)
		}
		require.Len(t, running, 300, "every key runs")
		for k, n := range running {
			require.Equal(t, 1, n, "key %s runs one, its limit", k)
		}
		res, err = store.WorkflowFlowClaim(ctx, params, spec)
		require.NoError(t, err)
		require.Empty(t, res.Claimed, "every key is full")
		require.False(t, res.More)
	})
}
