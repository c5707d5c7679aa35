package worker_test

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

// slowStep is a definition whose one step runs until released or cancelled, counting how many of
// its attempts run at once.
type slowStep struct {
	running, most, runs atomic.Int32
}

func (s *slowStep) definition() workflow.Definition {
	return workflow.Definition{Type: "t.slow", States: []workflow.State{
		{Name: "run", Kind: workflow.Start, Next: []string{"done"}, Handler: func(ctx *workflow.StepContext) (workflow.Next, error) {
			n := s.running.Add(1)
			defer s.running.Add(-1)
			s.runs.Add(1)
			for {
				m := s.most.Load()
				if n <= m || s.most.CompareAndSwap(m, n) {
					break
				}
			}
			select {
			case <-ctx.Done():
				return workflow.Next{}, ctx.Err()
			case <-time.After(700 * time.Millisecond):
			}
			return workflow.MoveTo("done"), nil
		}},
		{Name: "done", Kind: workflow.End}}}
}

// Pausing a running step cancels it (a CANCELLED task instance); resuming at once runs the state
// again only after that attempt has ended: never two attempts at once, nothing LOST, and the
// workflow finishes.
func TestPauseResumeDuringAStepRunsOneAttemptAtATime(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		slow := &slowStep{}
		b := setup(t, store, slow.definition())
		pool := b.startWorker(t, steadyOptions())
		w := b.start(t, "t.slow", `{}`)
		b.waitFor(t, w.ID, "running", func(w *persistence.Workflow) bool { return w.Status == persistence.StatusExecuting })
		require.Eventually(t, func() bool { return slow.running.Load() == 1 }, 5*time.Second, 5*time.Millisecond)

		paused, err := b.engine.Pause(ctx, workflow.ChangeParams{ID: w.ID})
		require.NoError(t, err)
		require.Equal(t, persistence.StatusPaused, paused.Status)
		resumed, err := b.engine.Resume(ctx, workflow.ChangeParams{ID: w.ID})
		require.NoError(t, err)
		require.Equal(t, persistence.StatusInProgress, resumed.Status)

		b.waitStatus(t, w.ID, persistence.StatusFinished)
		require.EqualValues(t, 1, slow.most.Load(), "two attempts of one workflow ran at once")
		require.EqualValues(t, 2, slow.runs.Load(), "the cancelled attempt and the one after resume")
		tasks := b.tasks(t, w.ID)
		require.Len(t, tasks, 2)
		require.Equal(t, persistence.TaskCancelled, tasks[0].Status)
		require.Equal(t, persistence.TaskSucceeded, tasks[1].Status)
		require.Zero(t, pool.Stats().Recovered.Load(), "nothing was recovered as lost")
		// Stays finished: no stale attempt comes back.
		time.Sleep(500 * time.Millisecond)
		require.Len(t, b.tasks(t, w.ID), 2)
	})
}

// Pause and resume many times while the step runs, on the demo's ship step: one attempt at a time
// (at most one in flight in the pool), and the order finishes with one successful ship.
func TestPauseResumeRepeatedDuringShip(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		b := setup(t, store)
		pool := b.startWorker(t, steadyOptions())
		w := b.start(t, "demo.order", `{"shipDelayMs": 400}`)
		b.waitFor(t, w.ID, "shipping", func(w *persistence.Workflow) bool {
			return w.State == "ship" && w.Status == persistence.StatusExecuting
		})
		stop := make(chan struct{})
		var most atomic.Int64
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
				n, err := store.DB().NewSelect().TableExpr("workflows").Where("id = ? AND executor_id IS NOT NULL", w.ID).Count(ctx)
				if err == nil && int64(n) > most.Load() {
					most.Store(int64(n))
				}
				// The pool runs one workflow: more than one slot taken means two attempts at once.
				if in := int64(pool.InFlight()); in > most.Load() {
					most.Store(in)
				}
			}
		}()
		for range 5 {
			_, err := b.engine.Pause(ctx, workflow.ChangeParams{ID: w.ID})
			require.NoError(t, err)
			time.Sleep(20 * time.Millisecond)
			_, err = b.engine.Resume(ctx, workflow.ChangeParams{ID: w.ID})
			require.NoError(t, err)
			time.Sleep(50 * time.Millisecond)
		}
		b.waitStatus(t, w.ID, persistence.StatusFinished)
		close(stop)
		require.LessOrEqual(t, most.Load(), int64(1), "steps in flight for one workflow")
		var shipped, lost int
		for _, ti := range b.tasks(t, w.ID) {
			if ti.State == "ship" && ti.Status == persistence.TaskSucceeded {
				shipped++
			}
			if ti.Status == persistence.TaskLost {
				lost++
			}
		}
		require.Equal(t, 1, shipped)
		require.Zero(t, lost)
		require.Zero(t, pool.Stats().Recovered.Load())
	})
}
