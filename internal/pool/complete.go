// Completing: finished steps are written in batches, and a workflow whose next step is due at
// once may stay claimed for it (a chain, bounded by maxChain).

package pool

import (
	"context"
	"time"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
)

// completeLoop writes outcomes in batches: whatever has arrived while the previous batch was being
// written goes into the next transaction, and while other steps are still running it waits up to
// CompleteDelay for more, so that a busy pool writes few large transactions.
func (w *Worker) completeLoop(ctx context.Context) {
	batch := make([]*engine.Outcome, 0, w.opts.CompleteBatch)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var o *engine.Outcome
		select {
		case o = <-w.results:
		case <-w.drained:
			// Write what finished during the drain, then stop.
			select {
			case o = <-w.results:
			default:
				return
			}
		}
		batch = append(batch[:0], o)
		// Gather what else has finished; while more steps are running, wait for them until
		// CompleteDelay after the first (one deadline, however the results trickle in).
		var deadline <-chan time.Time
	gather:
		for len(batch) < w.opts.CompleteBatch {
			select {
			case o := <-w.results:
				batch = append(batch, o)
				continue
			default:
			}
			if len(w.slots) <= len(batch) {
				break // nothing else is running: write now
			}
			if deadline == nil {
				timer.Reset(w.opts.CompleteDelay)
				deadline = timer.C
			}
			select {
			case o := <-w.results:
				batch = append(batch, o)
			case <-deadline:
				deadline = nil
				break gather
			}
		}
		if deadline != nil && !timer.Stop() {
			<-timer.C
		}
		op := w.beginHolding()
		continued := w.complete(ctx, batch)
		kept := make(map[int64]int, len(continued)) // workflow to the version its next attempt holds
		for _, wf := range continued {
			kept[wf.ID] = wf.Version
		}
		inBatch := make(map[int64]bool, len(batch))
		for _, o := range batch {
			inBatch[o.WorkflowID()] = true
		}
		released := 0
		var freed []*engine.Outcome
		handed := map[string]bool{} // type and key of the slots handed on
		w.heldMu.Lock()
		for _, wf := range continued {
			if !inBatch[wf.ID] {
				// A slot handed on by a workflow of the batch: its next workflow takes the pool's
				// slot of the one that ended.
				w.held[wf.ID] = append(w.held[wf.ID], wf.Version)
				handed[wf.Type+"\x00"+wf.FlowKey()] = true
				released--
				w.stats.Claimed.Add(1)
				w.stats.FlowHandedOn.Add(1)
			}
		}
		for _, o := range batch {
			id := o.WorkflowID()
			next, ok := kept[id]
			if ok && next == o.ClaimedVersion()+1 {
				w.held[id] = append(w.held[id], next) // the same claim runs its next step
			} else {
				released++
				if !handed[o.WorkflowType()+"\x00"+o.ConcurrencyKey()] {
					freed = append(freed, o)
				}
			}
			w.forget(id, o.ClaimedVersion())
		}
		delete(w.holding, op)
		w.heldMu.Unlock()
		// A kept workflow keeps its slot and runs its next step now.
		for _, wf := range continued {
			go w.execute(ctx, wf)
		}
		w.noteFreed(freed)
		full := len(w.slots) == cap(w.slots)
		w.freeSlots(released)
		if released > 0 {
			switch {
			case full:
				w.poke() // work may have waited for the pool's own slots: every key's
			case w.anyUnkeyed(freed):
				w.pokePlain() // a workflow without a concurrency limit may be due again
			default:
				w.pokeFreed()
			}
		}
	}
}

// freeSlots gives back n of the pool's slots; when none is taken any more, the drain, which may
// wait for them, looks again.
func (w *Worker) freeSlots(n int) {
	if n <= 0 {
		return
	}
	for range n {
		<-w.slots
	}
	if len(w.slots) == 0 {
		select {
		case w.idle <- struct{}{}:
		default:
		}
	}
}

// complete writes a batch, retrying while the database is unreachable, and returns the workflows
// kept for their next step. A batch that keeps failing is written one outcome at a time, so one bad
// outcome cannot hold back the others.
func (w *Worker) complete(ctx context.Context, batch []*engine.Outcome) []*persistence.Workflow {
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		written, continued, err := w.engine.CompleteAndContinue(ctx, batch, w.keep)
		if err == nil {
			w.stats.Completed.Add(int64(len(written)))
			w.stats.Fenced.Add(int64(len(batch) - len(written)))
			for _, o := range written {
				if o.Status().Terminal() {
					w.stats.Ended.Add(1)
				}
			}
			return continued
		}
		if ctx.Err() != nil {
			return nil // shutting down hard: the release or another node's recovery takes over
		}
		if attempt >= 3 && len(batch) > 1 {
			var all []*persistence.Workflow
			for _, o := range batch {
				all = append(all, w.complete(ctx, []*engine.Outcome{o})...)
			}
			return all
		}
		if attempt >= 3 {
			w.log.Error("completion keeps failing; recording the step as failed", "workflow", batch[0].WorkflowID(), "error", err)
			batch = []*engine.Outcome{w.engine.FailOutcome(batch[0], err)}
		} else {
			w.log.Warn("completion failed; retrying", "error", err, "batch", len(batch))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// forget drops one attempt from held (heldMu held); the chain count goes with the last attempt.
func (w *Worker) forget(id int64, version int) {
	vs := w.held[id]
	for i, v := range vs {
		if v == version {
			vs = append(vs[:i], vs[i+1:]...)
			break
		}
	}
	if len(vs) == 0 {
		delete(w.held, id)
		delete(w.chain, id)
		return
	}
	w.held[id] = vs
}

// maxChain bounds how many steps in a row a workflow may run without being released, so that a
// long chain cannot keep due work of higher priority waiting.
const maxChain = 16

// maxHandChains bounds the keys whose slots' passing on a pool counts.
const maxHandChains = 100000

// keep decides whether a workflow whose next step is due now stays claimed for it, and whether an
// ending workflow's concurrency slot passes on to its key's next workflow on this pool: not while
// the pool drains, and not past maxChain steps in a row. A slot passes on without a bound while
// the pool has free slots (the workflow it passes to takes the pool slot of the one that ended, so
// nothing else waits for it); in a full pool, at most maxChain times in a row, and then the claims
// decide what runs next.
func (w *Worker) keep(o *engine.Outcome) bool {
	if w.stopping.Load() || w.rateLimited(o.WorkflowType()) {
		return false // a rate-limited step starts only through a claim
	}
	w.heldMu.Lock()
	defer w.heldMu.Unlock()
	if !o.Status().HoldsSlot() {
		key := o.WorkflowType() + "\x00" + o.ConcurrencyKey()
		if len(w.slots) < cap(w.slots) {
			delete(w.handChain, key)
			return true
		}
		if len(w.handChain) >= maxHandChains {
			clear(w.handChain)
		}
		if w.handChain[key] >= maxChain {
			delete(w.handChain, key) // released to every node's claims
			return false
		}
		w.handChain[key]++
		return true
	}
	id := o.WorkflowID()
	if w.chain[id] >= maxChain {
		return false
	}
	w.chain[id]++
	return true
}
