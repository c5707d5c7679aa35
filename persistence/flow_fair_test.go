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
