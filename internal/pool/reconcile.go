// The pool's own upkeep: releasing what it holds but does not run, and registering again when it
// was declared dead. Its heartbeat is a maintenance.Heartbeat (one per executor, owned by the pool).

package pool

import (
	"context"
	"time"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
)

// reconcileLoop releases, every heartbeat interval, what this pool holds but does not run. It is
// the pool's own upkeep (it reads what the pool runs); the node's services (package
// internal/maintenance, started by package cairn's Node.Run) recover dead executors' work, fire
// schedules and apply the retention, once per node.
func (w *Worker) reconcileLoop(ctx context.Context) {
	t := time.NewTicker(w.opts.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n := w.reconcile(ctx); n > 0 {
			w.stats.Recovered.Add(int64(n))
			w.poke()
		}
	}
}

// declaredDead registers the executor again after another node declared it dead (paused,
// partitioned) and took its work over, and cancels the steps still running for the old one.
func (w *Worker) declaredDead(ctx context.Context) {
	old := w.ExecutorID()
	if err := w.register(ctx); err != nil {
		w.log.Error("error registering again after being declared dead", "error", err)
		return
	}
	n := w.engine.CancelExecutorSteps(old)
	w.log.Warn("executor was declared dead; registered again", "old", old, "new", w.ExecutorID(), "cancelled_steps", n)
}

// reconcile releases workflows the database says this executor holds but the pool is not running
// (its completion was lost, say in a database crash), so that they run again. It leaves alone
// what changed since the oldest claim or completion in progress began: a claim commits before
// the pool lists what it claimed as held, and a claim that a busy machine held up longer than a
// heartbeat interval in between had its workflow released and claimed again, two attempts at once.
func (w *Worker) reconcile(ctx context.Context) int {
	before := persistence.Now().Add(-w.opts.HeartbeatInterval)
	w.heldMu.Lock()
	for _, began := range w.holding {
		if began.Before(before) {
			before = began
		}
	}
	w.heldMu.Unlock()
	ids, err := w.store.WorkflowClaimedBefore(ctx, w.ExecutorID(), before)
	if err != nil || len(ids) == 0 {
		return 0
	}
	w.heldMu.Lock()
	var stale []int64
	for _, id := range ids {
		if len(w.held[id]) == 0 {
			stale = append(stale, id)
		}
	}
	w.heldMu.Unlock()
	if len(stale) == 0 {
		return 0
	}
	n, err := w.engine.Recover(ctx, engine.RecoverParams{ExecutorID: w.ExecutorID(), Held: stale})
	if err != nil {
		w.log.Warn("error releasing held workflows that are not running", "error", err)
		return 0
	}
	if n > 0 {
		w.log.Warn("released workflows held but not running here", "count", n)
	}
	return n
}
