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

// slowStep is a definition whose one step runs until the test lets that attempt end (a token on
// release), noticing neither pause nor cancellation before then, as a step busy in a call that
// ignores its context; it counts how many of its attempts run at once.
type slowStep struct {
	running, most atomic.Int32
	started       chan struct{} // a token as each attempt starts
	release       chan struct{} // a token lets one attempt end
	done          chan struct{} // closed when the test ends: every attempt ends
}

func newSlowStep() *slowStep {
	return &slowStep{started: make(chan struct{}, 10), release: make(chan struct{}), done: make(chan struct{})}
}

func (s *slowStep) definition() workflow.Definition {
	return workflow.Definition{Type: "t.slow", States: []workflow.State{
		{Name: "run", Kind: workflow.Start, Next: []string{"done"}, Handler: func(ctx workflow.StepContext) (workflow.Next, error) {
			n := s.running.Add(1)
			defer s.running.Add(-1)
			for {
				m := s.most.Load()
				if n <= m || s.most.CompareAndSwap(m, n) {
					break
				}
			}
			s.started <- struct{}{}
			select {
			case <-s.release:
			case <-s.done:
			}
			if err := ctx.Err(); err != nil {
				return workflow.Next{}, err
			}
			return workflow.MoveTo("done"), nil
		}},
		{Name: "done", Kind: workflow.End}}}
}

// next waits for the next attempt to start.
func (s *slowStep) next(t *testing.T) {
	t.Helper()
	select {
	case <-s.started:
	case <-time.After(30 * time.Second):
		t.Fatal("no attempt started")
	}
}

// Pausing a running step cancels it (a CANCELLED task instance); resuming at once runs the state
// again only after that attempt has ended: never two attempts at once, nothing LOST, and the
// workflow finishes. The first attempt runs on until the test ends it, so that what a claim does
// meanwhile is seen on every run, not only when a second attempt happens to start in time.
func TestPauseResumeDuringAStepRunsOneAttemptAtATime(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		slow := newSlowStep()
		b := setup(t, store, slow.definition())
		pool := b.startWorker(t, steadyOptions())
		t.Cleanup(func() { close(slow.done) }) // before the pool drains
		w := b.start(t, "t.slow", `{}`)
		slow.next(t)
		running, err := store.WorkflowGet(ctx, w.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusExecuting, running.Status)
		require.NotNil(t, running.ExecutorID)

		paused, err := b.engine.Pause(ctx, workflow.ChangeParams{ID: w.ID})
		require.NoError(t, err)
		require.Equal(t, persistence.StatusPaused, paused.Status)
		resumed, err := b.engine.Resume(ctx, workflow.ChangeParams{ID: w.ID})
		require.NoError(t, err)
		require.Equal(t, persistence.StatusInProgress, resumed.Status)

		// The first attempt still runs: the workflow is due, yet no node may claim it, neither
		// this pool (the row stays as the resume left it) nor another node trying now.
		rival, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "rival", PID: 2, Group: "default", Expiry: time.Minute})
		require.NoError(t, err)
		now := persistence.Now()
		claimed, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: rival.ID, Group: "default", Limit: 10, Now: now,
			StepDeadline: now.Add(time.Minute), Types: []string{"t.slow"}})
		require.NoError(t, err)
		require.Empty(t, claimed, "another node claimed a workflow whose attempt still runs")
		held, err := store.WorkflowGet(ctx, w.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusInProgress, held.Status, "the pool claimed a workflow whose attempt still runs")
		require.Equal(t, running.ExecutorID, held.ExecutorID, "the running attempt keeps its workflow")

		slow.release <- struct{}{} // the first attempt ends, cancelled; only now the state runs again
		slow.next(t)
		slow.release <- struct{}{}
		b.waitStatus(t, w.ID, persistence.StatusFinished)
		require.EqualValues(t, 1, slow.most.Load(), "two attempts of one workflow ran at once")
		tasks := b.tasks(t, w.ID)
		require.Len(t, tasks, 2, "the cancelled attempt and the one after resume")
		require.Equal(t, persistence.TaskCancelled, tasks[0].Status)
		require.Equal(t, persistence.TaskSucceeded, tasks[1].Status)
		require.Zero(t, pool.Stats().Recovered.Load(), "nothing was recovered as lost")
		require.Empty(t, slow.started, "no third attempt started")
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
