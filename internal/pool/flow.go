// Flow control in the claim: types without flow control are claimed by the plain claim, whose
// statement and cost stay what they are; each flow-controlled type has a claim of its own that
// holds it to its limits (persistence.Store.WorkflowFlowClaim).

package pool

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// flowPool is what the claim loop learnt of flow control in its last claim.
type flowPool struct {
	mu sync.Mutex
	// rated are the rate-limited types: their steps are never kept for a chain.
	rated map[string]bool
	// nextSlot is when a workflow held back by a rate limit may run (zero: none is).
	nextSlot time.Time
	// keyed are the types with a concurrency limit; freed, by type, the keys whose slots this
	// pool's completions released since its last claim.
	keyed map[string]bool
	freed map[string]map[string]int // type -> key -> claims that did not serve it yet
	// swept is when the last flow claim of every key (a sweep) ran; the claim loop alone reads
	// and writes it.
	swept time.Time
	// retryAt is when the claim loop claims again for keys whose workflows a claim found locked
	// by another transaction (zero: none waits).
	retryAt time.Time
}

// noteFreed records the keys of the flow-controlled workflows a completion released, for the
// next claim to claim their keys' next workflows without reading the others'.
func (w *Worker) noteFreed(released []*engine.Outcome) {
	for _, o := range released {
		w.noteKey(o.WorkflowType(), o.ConcurrencyKey())
	}
}

// anyUnkeyed reports whether any of outcomes is of a type without a concurrency limit: its
// workflow's next step is claimed by the plain claim (or a rate limit's flow claim).
func (w *Worker) anyUnkeyed(outcomes []*engine.Outcome) bool {
	w.flow.mu.Lock()
	defer w.flow.mu.Unlock()
	for _, o := range outcomes {
		if !w.flow.keyed[o.WorkflowType()] {
			return true
		}
	}
	return false
}

// noteKey records a key of a type with a concurrency limit for the next claim, and reports
// whether the type is one.
func (w *Worker) noteKey(typ, key string) bool {
	w.flow.mu.Lock()
	defer w.flow.mu.Unlock()
	if !w.flow.keyed[typ] {
		return false
	}
	w.hintLocked(typ, key, 0)
	return true
}

// hintLocked notes a key of a type for the next claim, with the claims that missed it so far
// (w.flow.mu held).
func (w *Worker) hintLocked(typ, key string, missed int) {
	if w.flow.freed == nil {
		w.flow.freed = map[string]map[string]int{}
	}
	if w.flow.freed[typ] == nil {
		w.flow.freed[typ] = map[string]int{}
	}
	if n, ok := w.flow.freed[typ][key]; !ok || missed < n {
		w.flow.freed[typ][key] = missed
	}
}

// hintRetry is how long the pool waits before it claims again for a key whose due workflow a
// claim found locked by another transaction (SKIP LOCKED), after the key's nth such miss: 5 ms,
// doubling, at most a second. The key stays hinted until a claim takes its workflow or no longer
// finds it due, so a lock held however long never strands it.
func hintRetry(n int) time.Duration {
	return min(5*time.Millisecond<<min(n, 8), time.Second)
}

// keepHints notes again the keys of a type that a claim did not serve (none of claimed has them):
// all of them when the claim was full (the next claim, when slots free, takes them), and those
// whose workflow it chose but could not take (skipped), to be claimed again after hintRetry. It
// reports whether it kept any for lack of room.
func (w *Worker) keepHints(typ string, keys []string, missed map[string]int, claimed []*persistence.Workflow, full bool, skipped []string) bool {
	served := make(map[string]bool, len(claimed))
	for _, c := range claimed {
		served[c.FlowKey()] = true
	}
	w.flow.mu.Lock()
	defer w.flow.mu.Unlock()
	kept := false
	for _, k := range keys {
		switch {
		case served[k]:
		case full:
			w.hintLocked(typ, k, missed[k])
			kept = true
		case slices.Contains(skipped, k):
			w.hintLocked(typ, k, missed[k]+1)
			if at := time.Now().Add(hintRetry(missed[k])); w.flow.retryAt.IsZero() || at.Before(w.flow.retryAt) {
				w.flow.retryAt = at
			}
		}
	}
	return kept
}

// takeFreed returns and forgets the hinted keys of a type, with the claims that missed each.
func (w *Worker) takeFreed(typ string) ([]string, map[string]int) {
	w.flow.mu.Lock()
	defer w.flow.mu.Unlock()
	missed := w.flow.freed[typ]
	keys := make([]string, 0, len(missed))
	for k := range missed {
		keys = append(keys, k)
	}
	delete(w.flow.freed, typ)
	return keys, missed
}

func (w *Worker) rateLimited(typ string) bool {
	w.flow.mu.Lock()
	defer w.flow.mu.Unlock()
	return w.flow.rated[typ]
}

// throttledDue reports whether a workflow held back by a rate limit may run now.
func (w *Worker) throttledDue() bool {
	w.flow.mu.Lock()
	defer w.flow.mu.Unlock()
	return !w.flow.nextSlot.IsZero() && !time.Now().Before(w.flow.nextSlot)
}

// nextPoll is how long the claim loop waits for a wake-up before it claims again: the poll
// interval, or less when a throttled workflow may run sooner.
func (w *Worker) nextPoll() time.Duration {
	w.flow.mu.Lock()
	next, retry := w.flow.nextSlot, w.flow.retryAt
	w.flow.mu.Unlock()
	d := w.opts.PollInterval
	for _, at := range []time.Time{next, retry} {
		if !at.IsZero() {
			d = min(d, max(time.Until(at), time.Millisecond))
		}
	}
	return d
}

// claim claims up to limit due workflows: when plain is set, those of types without flow control
// in one plain claim, then, with what slots are left, for each flow-controlled type the next workflows of the keys
// this pool's completions freed and, when sweep is set, the type's due workflows of every key
// (a flow claim: a wake-up, the poll, or a full batch before asks for one).
func (w *Worker) claim(ctx context.Context, limit int, sweep, plainClaim bool) ([]*persistence.Workflow, error) {
	types := w.engine.Types(w.opts.Group)
	w.recordTypes(ctx, types)
	flows, err := w.engine.FlowTypes(ctx, types)
	if err != nil {
		return nil, err // which types are held back is unknown: claim none
	}
	plainTypes := types
	rated, keyed := map[string]bool{}, map[string]bool{}
	if len(flows) > 0 {
		controlled := make(map[string]bool, len(flows))
		for _, f := range flows {
			controlled[f.Type] = true
			if f.Flow.RateLimit != nil {
				rated[f.Type] = true
			}
			if f.Flow.Concurrency != nil {
				keyed[f.Type] = true
			}
		}
		plainTypes = make([]string, 0, len(types))
		for _, t := range types {
			if !controlled[t] {
				plainTypes = append(plainTypes, t)
			}
		}
	}
	// The keys hinted so far, taken before the claim's time is read: a hinted workflow was due
	// before its hint came, so it is due at that time.
	hinted := make(map[string][]string, len(flows))
	missed := make(map[string]map[string]int, len(flows))
	w.flow.mu.Lock()
	w.flow.retryAt = time.Time{} // this claim serves the keys that waited for it
	w.flow.mu.Unlock()
	for _, f := range flows {
		hinted[f.Type], missed[f.Type] = w.takeFreed(f.Type)
	}
	now := persistence.Now()
	params := persistence.WorkflowClaimParams{ExecutorID: w.ExecutorID(), Group: w.opts.Group,
		Limit: limit, Now: now, StepDeadline: now.Add(workflow.DefaultStepTimeout), StepTimeouts: w.engine.StepTimeouts(w.opts.Group),
		Types: plainTypes}
	w.plainTypes.Store(&plainTypes)
	var claimed []*persistence.Workflow
	if plainClaim || len(flows) == 0 {
		claimed, err = w.store.WorkflowClaim(ctx, params)
	}
	if err != nil || len(flows) == 0 {
		w.setFlow(rated, keyed, time.Time{})
		return claimed, err
	}
	var next time.Time
	if !sweep {
		// The rate limits were not read: when a throttled workflow may run stays as it was.
		w.flow.mu.Lock()
		next = w.flow.nextSlot
		w.flow.mu.Unlock()
	}
	var cancels []persistence.FlowCancel
	took := func(res persistence.FlowClaimResult) {
		claimed = append(claimed, res.Claimed...)
		cancels = append(cancels, res.Cancel...)
		w.stats.FlowThrottled.Add(int64(res.Throttled))
		if !res.NextSlot.IsZero() && (next.IsZero() || res.NextSlot.Before(next)) {
			next = res.NextSlot
		}
	}
	for _, f := range flows {
		if keys := hinted[f.Type]; len(keys) > 0 {
			params.Limit = limit - len(claimed)
			if params.Limit <= 0 {
				w.keepHints(f.Type, keys, missed[f.Type], nil, true, nil) // for the next claim: this one is full
				continue
			}
			res, err := w.store.WorkflowFlowClaimKeys(ctx, params, f.Spec(), keys)
			if err != nil {
				w.keepHints(f.Type, keys, missed[f.Type], nil, true, nil)
				return claimed, err
			}
			// Keys the claim did not reach wait for the next claim; those it missed get one more.
			if w.keepHints(f.Type, keys, missed[f.Type], res.Claimed, len(res.Claimed) == params.Limit, res.Missed) {
				defer w.pokeFreed()
			}
			took(res)
		}
		params.Limit = limit - len(claimed)
		if !sweep || params.Limit <= 0 {
			continue
		}
		w.flow.swept = time.Now()
		res, err := w.store.WorkflowFlowClaim(ctx, params, f.Spec())
		if err != nil {
			return claimed, err
		}
		if res.More && len(res.Claimed) < params.Limit {
			w.pokeSweep() // the keys past those it looked at: the next claim goes on
		}
		if len(res.Missed) > 0 && keyed[f.Type] {
			w.keepHints(f.Type, res.Missed, nil, res.Claimed, false, res.Missed) // claimed for again after hintRetry
		}
		took(res)
	}
	w.setFlow(rated, keyed, next)
	if len(cancels) > 0 {
		w.engine.CancelForFlow(ctx, cancels)
		w.stats.FlowCancelled.Add(int64(len(cancels)))
		w.poke() // the cancelled holders' slots are free for the workflows that displaced them
	}
	return claimed, nil
}

func (w *Worker) setFlow(rated, keyed map[string]bool, next time.Time) {
	w.flow.mu.Lock()
	w.flow.rated, w.flow.keyed, w.flow.nextSlot = rated, keyed, next
	w.flow.mu.Unlock()
}
