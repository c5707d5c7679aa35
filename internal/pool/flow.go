// Flow control in the claim: types without flow control are claimed by the plain claim, whose
// statement and cost stay what they are; each flow-controlled type has a claim of its own that
// holds it to its limits (persistence.Store.WorkflowFlowClaim).

package pool

import (
	"context"
	"sync"
	"time"

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
// then each flow-controlled type's in a flow claim, with what slots are left.
func (w *Worker) claim(ctx context.Context, limit int) ([]*persistence.Workflow, error) {
	types := w.engine.Types(w.opts.Group)
	w.recordTypes(ctx, types)
	flows, err := w.engine.FlowTypes(ctx, types)
	if err != nil {
		return nil, err // which types are held back is unknown: claim none
	}
	plain := types
	rated := map[string]bool{}
	if len(flows) > 0 {
		controlled := make(map[string]bool, len(flows))
		for _, f := range flows {
			controlled[f.Type] = true
			if f.Flow.RateLimit != nil {
				rated[f.Type] = true
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
		w.setFlow(rated, time.Time{})
		return claimed, err
	}
	var next time.Time
	var cancels []persistence.FlowCancel
	for _, f := range flows {
		params.Limit = limit - len(claimed)
		if params.Limit <= 0 {
			break
		}
		res, err := w.store.WorkflowFlowClaim(ctx, params, f.Spec())
		if err != nil {
			return claimed, err
		}
		claimed = append(claimed, res.Claimed...)
		cancels = append(cancels, res.Cancel...)
		w.stats.FlowThrottled.Add(int64(res.Throttled))
		if !res.NextSlot.IsZero() && (next.IsZero() || res.NextSlot.Before(next)) {
			next = res.NextSlot
		}
	}
	w.setFlow(rated, next)
	if len(cancels) > 0 {
		w.engine.CancelForFlow(ctx, cancels)
		w.stats.FlowCancelled.Add(int64(len(cancels)))
		w.poke() // the cancelled holders' slots are free for the workflows that displaced them
	}
	return claimed, nil
}

func (w *Worker) setFlow(rated map[string]bool, next time.Time) {
	w.flow.mu.Lock()
	w.flow.rated, w.flow.nextSlot = rated, next
	w.flow.mu.Unlock()
}
