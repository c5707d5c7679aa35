package serverless_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// TestForkClaimCommitsWithItsStep: a branch of a competing fork claims the win in the step that
// ends it. When that step fails after the claim (here its data is over the engine's value
// limit), the claim goes with it: no signal reaches the parent, no other branch is cancelled,
// and the branch that finishes next wins.
func TestForkClaimCommitsWithItsStep(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNodeLimited(t, store, workflow.Limits{ValueBytes: 1000}, serverless.Options{})
		n.startWorker(t)
		def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: test, name: fork-claim-fails, version: '1.0.0'}
do:
  - race:
      fork:
        compete: true
        branches:
          - huge:
              set: {blob: '${ "x" * 3000 }'}
          - slow:
              do:
                - nap: {wait: {milliseconds: 500}}
                - late: {set: {winner: slow}}
`)
		w := n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.Equal(t, map[string]any{"winner": "slow"}, output(t, w))
		statuses := map[string]persistence.Status{}
		for _, c := range childrenOf(t, store, w.ID) {
			statuses[*c.BusinessKey] = c.Status
		}
		require.Equal(t, map[string]persistence.Status{
			"/do/0/race/fork/branches/0/huge": persistence.StatusFailed,
			"/do/0/race/fork/branches/1/slow": persistence.StatusFinished,
		}, statuses)
		sigs, err := store.SignalList(t.Context(), []int64{w.ID})
		require.NoError(t, err)
		require.Len(t, sigs, 1, "only the claim of the branch that finished reached the parent")
		var claim struct{ Branch int }
		require.NoError(t, json.Unmarshal(sigs[0].Payload, &claim))
		require.Equal(t, 1, claim.Branch)
	})
}
