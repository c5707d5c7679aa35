// Taking woken workflows: a remote result's transaction may claim the workflows it wakes for this
// pool (engine.WakeClaimer), with slots the pool reserved for it; the pool runs them once it
// committed, as it runs what its claims take.

package pool

import (
	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// ReserveWake reserves up to n free slots for the workflows a transaction is about to wake, and
// returns the claim to make with them: of the types the pool's last claim claimed plainly
// (types under flow control are claimed only by their flow claims). None while the pool stops.
func (w *Worker) ReserveWake(n int) *engine.WakeClaim {
	w.wakeMu.Lock()
	defer w.wakeMu.Unlock()
	types := w.plainTypes.Load()
	if w.stopping.Load() || n <= 0 || types == nil || len(*types) == 0 {
		return nil
	}
	reserved := 0
reserve:
	for reserved < n {
		select {
		case w.slots <- struct{}{}:
			reserved++
		default:
			break reserve // full
		}
	}
	if reserved == 0 {
		return nil
	}
	op := w.beginHolding()
	now := persistence.Now()
	return &engine.WakeClaim{
		Params: persistence.WorkflowClaimParams{ExecutorID: w.ExecutorID(), Group: w.opts.Group, Limit: reserved, Now: now,
			StepDeadline: now.Add(workflow.DefaultStepTimeout), StepTimeouts: w.engine.StepTimeouts(w.opts.Group), Types: *types},
		Done: func(claimed []*persistence.Workflow) { w.adoptWoken(op, reserved, claimed) },
	}
}

// adoptWoken runs the workflows a wake-up claimed with a reservation of slots, and frees the
// slots they did not take.
func (w *Worker) adoptWoken(op uint64, reserved int, claimed []*persistence.Workflow) {
	w.stats.Claimed.Add(int64(len(claimed)))
	w.stats.ClaimedOnWake.Add(int64(len(claimed)))
	w.hold(op, claimed)
	for _, wf := range claimed {
		go w.execute(w.hard, wf)
	}
	w.freeSlots(reserved - len(claimed))
}

// stop marks the pool stopping (its drain begins): no step is kept for a chain any more, and no
// wake-up reserves its slots, so the drain sees every slot a reservation holds.
func (w *Worker) stop() {
	w.engine.SetWakeClaimer(w.opts.Group, nil)
	w.wakeMu.Lock()
	w.stopping.Store(true)
	w.wakeMu.Unlock()
}
