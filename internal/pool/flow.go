// Flow control in the claim: types without flow control are claimed by the plain claim, whose
// statement and cost stay what they are; each flow-controlled type has a claim of its own that
// holds it to its limits (persistence.Store.WorkflowFlowClaim).

package pool

import (
	"context"
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
	freed map[string]map[string]bool
}

// noteFreed records the keys of the flow-controlled workflows a completion released, for the
// next claim to claim their keys' next workflows without reading the others'.
func (w *Worker) noteFreed(released []*engine.Outcome) {
	for _, o := range released {
		w.noteKey(o.WorkflowType(), o.ConcurrencyKey())
	}
}

// noteKey records a key of a type with a concurrency limit for the next claim, and reports
// whether the type is one.
func (w *Worker) noteKey(typ, key string) bool {
	w.flow.mu.Lock()
	defer w.flow.mu.Unlock()
	if !w.flow.keyed[typ] {
		return false
	}
	if w.flow.freed == nil {
		w.flow.freed = map[string]map[string]bool{}
	}
	if w.flow.freed[typ] == nil {
		w.flow.freed[typ] = map[string]bool{}
	}
	w.flow.freed[typ][key] = true
	return true
}

// takeFreed returns and forgets the freed keys of a type.
func (w *Worker) takeFreed(typ string) []string {
	w.flow.mu.Lock()
	defer w.flow.mu.Unlock()
	keys := make([]string, 0, len(w.flow.freed[typ]))
	for k := range w.flow.freed[typ] {
		keys = append(keys, k)
	}
	delete(w.flow.freed, typ)
	return keys
}

func (w *Worker) rateLimited(typ string) bool {
	w.flow.mu.Lock()
	defer w.flow.mu.Unlock()
	return w.flow.rated[typ]
}

// nextPoll is how long the claim loop waits for a wake-up before it claims again: the poll
// interval, or less when a throttled workflow may run sooner.
func (w *Worker) nextPoll() time.Duration {
	w.flow.mu.Lock()
	next := w.flow.nextSlot
	w.flow.mu.Unlock()
	d := w.opts.PollInterval
	if !next.IsZero() {
		d = min(d, max(time.Until(next), time.Millisecond))
	}
	return d
}

// claim claims up to limit due workflows: those of types without flow control in one plain claim,
// then, with what slots are left, for each flow-controlled type the next workflows of the keys
// this pool's completions freed and, when sweep is set, the type's due workflows of every key
// (a flow claim: a wake-up, the poll, or a full batch before asks for one).
func (w *Worker) claim(ctx context.Context, limit int, sweep bool) ([]*persistence.Workflow, error) {
	types := w.engine.Types(w.opts.Group)
	w.recordTypes(ctx, types)
	flows, err := w.engine.FlowTypes(ctx, types)
	if err != nil {
		return nil, err // which types are held back is unknown: claim none
	}
	plain := types
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
		plain = make([]string, 0, len(types))
		for _, t := range types {
			if !controlled[t] {
				plain = append(plain, t)
			}
		}
	}
	now := persistence.Now()
	params := persistence.WorkflowClaimParams{ExecutorID: w.ExecutorID(), Group: w.opts.Group,
		Limit: limit, Now: now, StepDeadline: now.Add(workflow.DefaultStepTimeout), StepTimeouts: w.engine.StepTimeouts(w.opts.Group),
		Types: plain}
	claimed, err := w.store.WorkflowClaim(ctx, params)
	if err != nil || len(flows) == 0 {
		w.setFlow(rated, keyed, time.Time{})
		return claimed, err
	}
	var next time.Time
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
		if keys := w.takeFreed(f.Type); len(keys) > 0 && limit > len(claimed) {
			params.Limit = limit - len(claimed)
			res, err := w.store.WorkflowFlowClaimKeys(ctx, params, f.Spec(), keys)
			if err != nil {
				return claimed, err
			}
			took(res)
		}
		params.Limit = limit - len(claimed)
		if !sweep || params.Limit <= 0 {
			continue
		}
		res, err := w.store.WorkflowFlowClaim(ctx, params, f.Spec())
		if err != nil {
			return claimed, err
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
