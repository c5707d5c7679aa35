package pool_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// Cancelling the root of a tree whose leaves keep running steps, or sleep in one until interrupted,
// and whose short-lived leaves wake their parents, reaches every descendant: the cancel's transaction (root, then each level
// of children) collides with completions locking a parent then a child, and with claims; on
// MariaDB InnoDB breaks such deadlocks by rolling the cancel back, which must then run again.
func TestCancelOfABusyTreeReachesEveryDescendant(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		const mids, busyPerMid = 12, 3
		var ticks atomic.Int64
		spawn := func(typ string, n int, also ...string) workflow.StepFunc {
			return func(c workflow.StepContext) (workflow.Next, error) {
				for range n {
					c.StartChild(workflow.ChildRequest{Type: typ})
				}
				for _, a := range also {
					c.StartChild(workflow.ChildRequest{Type: a})
				}
				return workflow.MoveTo("await"), nil
			}
		}
		tree := func(typ string, h workflow.StepFunc) workflow.Definition {
			return workflow.Definition{Type: typ, States: []workflow.State{
				{Name: "spawn", Kind: workflow.Start, Handler: h, Next: []string{"await"}},
				{Name: "await", Kind: workflow.Wait, WaitFor: &workflow.WaitFor{Children: true}, Next: []string{"done"}},
				{Name: "done", Kind: workflow.End}}}
		}
		busy := workflow.Definition{Type: "t.busy", States: []workflow.State{
			{Name: "tick", Kind: workflow.Start, Next: []string{"tock"}, Handler: func(c workflow.StepContext) (workflow.Next, error) {
				ticks.Add(1)
				return workflow.MoveTo("tock"), nil
			}},
			{Name: "tock", Kind: workflow.Normal, Next: []string{"tick", "done"}, Handler: func(c workflow.StepContext) (workflow.Next, error) {
				return workflow.MoveTo("tick"), nil // runs until cancelled
			}},
			{Name: "done", Kind: workflow.End}}}
		// A sleeper's step runs until the cancel interrupts it, then lets go of its workflow.
		var asleep atomic.Int64
		sleeper := workflow.Definition{Type: "t.sleeper", States: []workflow.State{
			{Name: "sleep", Kind: workflow.Start, Next: []string{"done"}, Handler: func(c workflow.StepContext) (workflow.Next, error) {
				asleep.Add(1)
				<-c.Done()
				return workflow.Next{}, c.Err()
			}},
			{Name: "done", Kind: workflow.End}}}
		b := setup(t, store, busy, sleeper, tree("t.mid", spawn("t.busy", busyPerMid, "t.sleeper", "bench.noop")),
			tree("t.root", spawn("t.mid", mids)))
		b.startWorker(t, fastOptions())
		root := b.start(t, "t.root", `{}`)

		// The cancel comes while the middle workflows are being claimed and start their leaves,
		// and the first leaves run: the busiest moment of the tree.
		b.waitStatus(t, root.ID, persistence.StatusWaiting)
		all := func() []*persistence.Workflow {
			wfs, _, err := store.WorkflowList(ctx, persistence.WorkflowListParams{Limit: 1000})
			require.NoError(t, err)
			return wfs
		}
		_, err := b.engine.Cancel(ctx, workflow.ChangeParams{ID: root.ID, Reason: "stop the tree"})
		require.NoError(t, err)
		for _, w := range all() {
			if w.Type == "bench.noop" {
				require.Contains(t, []persistence.Status{persistence.StatusFinished, persistence.StatusCancelled}, w.Status)
				continue
			}
			require.Equal(t, persistence.StatusCancelled, w.Status, "%s workflow %d", w.Type, w.ID)
		}
		// Steps that were running let go of their workflows, which stay cancelled.
		for _, w := range all() {
			got := b.waitFor(t, w.ID, "let go", func(w *persistence.Workflow) bool { return w.ExecutorID == nil })
			if got.Type != "bench.noop" {
				require.Equal(t, persistence.StatusCancelled, got.Status, "%s workflow %d", got.Type, got.ID)
			}
		}
	})
}
