// Claiming: wake-ups and the poll make the claim loop take due workflows, as many as slots are
// free, and start each one's step.

package pool

import (
	"context"
	"slices"
	"time"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
)

// listenWake turns wake-up hints for this group into a poke of the claim loop.
// A hint of a concurrency key that became due makes the next claim claim for that key (a type
// without flow control, or not known yet as one: a wake-up).
func (w *Worker) listenWake(ctx context.Context) {
	ch, unsubscribe := w.engine.Notifier().Subscribe(persistence.TopicWake)
	defer unsubscribe()
	keys, unsubscribeKeys := w.engine.Notifier().Subscribe(persistence.TopicFlowKey)
	defer unsubscribeKeys()
	for {
		select {
		case <-ctx.Done():
			return
		case g := <-ch:
			if g == "" || g == w.opts.Group {
				w.poke()
			}
		case p := <-keys:
			g, typ, key, ok := persistence.ParseFlowKeyPayload(p)
			switch {
			case !ok || g != w.opts.Group:
			case w.noteKey(typ, key):
				w.pokeFreed()
			default:
				w.poke()
			}
		}
	}
}

// poke makes the claim loop claim: the plain claim and a flow claim of every flow-controlled
// type.
func (w *Worker) poke() {
	w.plain.Store(true)
	w.pokeSweep()
}

// pokeSweep makes the claim loop claim with a flow claim of every flow-controlled type.
func (w *Worker) pokeSweep() {
	w.sweep.Store(true)
	w.pokeFreed()
}

// pokePlain makes the claim loop claim with the plain claim: a workflow of a type without a
// concurrency limit let its pool slot go, and its next step may be due.
func (w *Worker) pokePlain() {
	w.plain.Store(true)
	w.pokeFreed()
}

// pokeFreed makes the claim loop claim for the keys that completions freed or hints named (and
// for whatever poke, pokeSweep or pokePlain asked for).
func (w *Worker) pokeFreed() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// recordTypes records the types the pool claims on its executor row when they (or the executor)
// changed since the last record: the API shows them, and stuck workflows are found by them.
func (w *Worker) recordTypes(ctx context.Context, types []string) {
	id := w.ExecutorID()
	if id == w.typesRecorded.executor && slices.Equal(types, w.typesRecorded.types) {
		return // the same as last time: compared, never formatted
	}
	if err := w.store.ExecutorTypesSet(ctx, w.ExecutorID(), types); err != nil {
		if ctx.Err() == nil {
			w.log.Warn("error recording the executor's types", "error", err)
		}
		return
	}
	w.typesRecorded.executor, w.typesRecorded.types = id, types
}

// minSweepInterval is the least time between two flow claims of every key that the poll asks
// for, unless a workflow held back by a rate limit may run now: such a claim reads every key of a
// type (the plain claim's cost does not grow with keys), and what it finds that no completion,
// hint or wake-up announced is work that became due with time.
const minSweepInterval = time.Second

// claimLoop claims due workflows while slots are free and starts their steps, until ctx ends.
func (w *Worker) claimLoop(ctx, hard context.Context) {
	poll := time.NewTimer(0)
	defer poll.Stop()
	backoff := 100 * time.Millisecond
	for {
		// Wait for a reason to claim: a wake-up, the poll, or a slot freed after a full batch.
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		case <-poll.C:
			w.plain.Store(true)
			if w.throttledDue() || time.Since(w.flow.swept) >= max(w.opts.PollInterval, minSweepInterval) {
				w.sweep.Store(true)
			}
		}
		for ctx.Err() == nil {
			free := cap(w.slots) - len(w.slots)
			if free == 0 {
				// Full: the completer pokes when slots free up.
				break
			}
			limit := min(free, w.opts.ClaimBatch)
			op := w.beginHolding()
			claimed, err := w.claim(ctx, limit, w.sweep.Swap(false), w.plain.Swap(false))
			if err != nil {
				w.endHolding(op)
				w.sweep.Store(true)
				w.plain.Store(true)
				if ctx.Err() == nil {
					w.log.Warn("claim failed", "error", err, "retry_in", backoff)
					select {
					case <-ctx.Done():
					case <-time.After(backoff):
					}
					backoff = min(backoff*2, 5*time.Second)
				}
				continue
			}
			backoff = 100 * time.Millisecond
			w.stats.Claimed.Add(int64(len(claimed)))
			if w.afterClaim != nil {
				w.afterClaim(claimed)
			}
			w.hold(op, claimed)
			for _, wf := range claimed {
				w.slots <- struct{}{}
				go w.execute(hard, wf)
			}
			if len(claimed) < limit {
				break // nothing more is due now
			}
			w.sweep.Store(true) // a full batch: more may be due
			w.plain.Store(true)
		}
		if !poll.Stop() {
			select {
			case <-poll.C:
			default:
			}
		}
		poll.Reset(w.nextPoll())
	}
}

// hold lists what a claim (op) took as held, and ends op.
func (w *Worker) hold(op uint64, claimed []*persistence.Workflow) {
	w.heldMu.Lock()
	defer w.heldMu.Unlock()
	for _, wf := range claimed {
		w.held[wf.ID] = append(w.held[wf.ID], wf.Version)
	}
	delete(w.holding, op)
}

func (w *Worker) execute(ctx context.Context, wf *persistence.Workflow) {
	o := w.engine.Execute(ctx, engine.ExecuteParams{Workflow: wf, ExecutorID: *wf.ExecutorID, Host: w.opts.Host})
	w.results <- o
}
