// Maintenance: what keeps a node and the cluster healthy besides running steps. The heartbeat
// keeps this executor alive; every heartbeat interval the pool also recovers dead executors' work,
// reconciles what it holds with what it runs, fires due schedules and applies the retention.

package worker

import (
	"context"
	"errors"
	"time"

	"github.com/cairnflow/cairn/internal/engineapi"
	"github.com/cairnflow/cairn/persistence"
)

// heartbeatLoop keeps the executor alive, on its own ticker and over the store's heartbeat
// connection, and does nothing else: neither a busy pool, nor slow maintenance, nor API reads
// holding the database's connections may delay it until the node looks dead.
func (w *Worker) heartbeatLoop(ctx context.Context) {
	t := time.NewTicker(w.opts.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		beatCtx, cancel := context.WithTimeout(ctx, w.opts.Expiry)
		err := w.store.ExecutorHeartbeat(beatCtx, w.ExecutorID(), w.opts.Expiry)
		cancel()
		if errors.Is(err, persistence.ErrNotFound) {
			// We were declared dead (paused, partitioned): our work was taken over and our late
			// completions are fenced off. Carry on as a new executor.
			old := w.ExecutorID()
			if err := w.register(ctx); err != nil {
				w.log.Error("error registering again after being declared dead", "error", err)
				continue
			}
			n := w.machine.CancelExecutorSteps(old)
			w.log.Warn("executor was declared dead; registered again", "old", old, "new", w.ExecutorID(), "cancelled_steps", n)
		} else if err != nil && ctx.Err() == nil {
			w.log.Warn("heartbeat failed", "error", err)
		}
	}
}

// maintainLoop recovers dead executors' work, releases what this pool holds but does not run,
// fires due schedules and purges ended workflows, every heartbeat interval.
func (w *Worker) maintainLoop(ctx context.Context) {
	t := time.NewTicker(w.opts.HeartbeatInterval)
	defer t.Stop()
	lastPurge, lastTrim := time.Now(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// Purge about every 30s; more often for a short retention.
		if w.opts.Retention > 0 && time.Since(lastPurge) >= min(30*time.Second, w.opts.Retention/10) {
			lastPurge = time.Now()
			w.purge(ctx)
		}
		if w.opts.EventRetention > 0 && time.Since(lastTrim) >= min(30*time.Second, w.opts.EventRetention/10) {
			lastTrim = time.Now()
			w.trimEvents(ctx)
		}
		n, err := w.machine.Recover(ctx, engineapi.RecoverParams{ExecutorID: w.ExecutorID()})
		if err != nil && ctx.Err() == nil {
			w.log.Warn("recovery failed", "error", err)
		}
		if m := w.reconcile(ctx); m > 0 {
			n += m
		}
		if _, err := w.machine.FireSchedules(ctx, persistence.Now()); err != nil && ctx.Err() == nil {
			w.log.Warn("firing schedules failed", "error", err)
		}
		if n > 0 {
			w.stats.Recovered.Add(int64(n))
			w.poke()
		}
	}
}

// reconcile releases workflows the database says this executor holds but the pool is not running
// (its completion was lost, say in a database crash), so that they run again.
func (w *Worker) reconcile(ctx context.Context) int {
	ids, err := w.store.WorkflowClaimedBefore(ctx, w.ExecutorID(), persistence.Now().Add(-w.opts.HeartbeatInterval))
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
	n, err := w.machine.Recover(ctx, engineapi.RecoverParams{ExecutorID: w.ExecutorID(), Held: stale})
	if err != nil {
		w.log.Warn("error releasing held workflows that are not running", "error", err)
		return 0
	}
	if n > 0 {
		w.log.Warn("released workflows held but not running here", "count", n)
	}
	return n
}

// purge deletes workflow trees that ended before the retention period, a bounded amount per call.
func (w *Worker) purge(ctx context.Context) {
	before := persistence.Now().Add(-w.opts.Retention)
	for range 10 {
		n, err := w.store.WorkflowPurge(ctx, persistence.WorkflowPurgeParams{FinishedBefore: before, Limit: 500})
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("purging ended workflows failed", "error", err)
			}
			return
		}
		if n > 0 {
			w.log.Info("purged ended workflows", "count", n, "ended_before", before)
		}
		if n < 500 {
			return
		}
	}
}

// trimEvents deletes the change events older than the event retention, a bounded amount per call.
func (w *Worker) trimEvents(ctx context.Context) {
	before := persistence.Now().Add(-w.opts.EventRetention)
	for range 20 {
		n, err := w.store.ChangeEventTrim(ctx, persistence.ChangeEventTrimParams{Before: before, Limit: 5000})
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("trimming change events failed", "error", err)
			}
			return
		}
		if n < 5000 {
			return
		}
	}
}
