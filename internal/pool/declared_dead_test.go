package pool_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// A node that finds it was declared dead cancels the steps it still runs for its former executor:
// their workflows went elsewhere (here, back to itself under its new executor) and their results
// would be fenced off, so they must not keep running beside the new attempts.
func TestDeclaredDeadCancelsItsLateSteps(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		var runs atomic.Int32
		firstCancelled := make(chan struct{})
		def := workflow.Definition{Type: "t.hang", States: []workflow.State{
			{Name: "run", Kind: workflow.Start, Next: []string{"done"}, Handler: func(ctx workflow.StepContext) (workflow.Next, error) {
				if runs.Add(1) > 1 {
					return workflow.MoveTo("done"), nil
				}
				select {
				case <-ctx.Done():
					close(firstCancelled)
					return workflow.Next{}, ctx.Err()
				case <-time.After(30 * time.Second):
				}
				return workflow.MoveTo("done"), nil
			}},
			{Name: "done", Kind: workflow.End}}}
		b := setup(t, store, def)
		pool := b.startWorker(t, fastOptions())
		w := b.start(t, "t.hang", `{}`)
		require.Eventually(t, func() bool { return runs.Load() == 1 }, 10*time.Second, 5*time.Millisecond)

		old := pool.ExecutorID()
		require.NoError(t, store.ExecutorStop(ctx, old)) // declared dead, as a node that stopped heartbeating is
		select {
		case <-firstCancelled:
		case <-time.After(10 * time.Second):
			t.Fatal("the late step of the executor declared dead was never cancelled")
		}
		b.waitStatus(t, w.ID, persistence.StatusFinished)
		require.NotEqual(t, old, pool.ExecutorID())
		require.EqualValues(t, 2, runs.Load())
		require.Eventually(t, func() bool { return pool.InFlight() == 0 }, 10*time.Second, 10*time.Millisecond)
	})
}
