// Slots handed on in a completion: a step that ends a workflow holding a slot of its concurrency
// key claims, in the same transaction, the key's next due workflow for the same executor, which
// runs it at once (as a kept workflow runs its next step). The key's queue then moves at the pace
// of its steps, not of the pool's claims.

package engine

import (
	"context"
	"time"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// handoff is what a completion batch may hand on: the outcomes that let a slot go, by type.
type handoff struct {
	specs map[string]persistence.FlowSpec
	// from are the outcomes whose slot may pass on, by index in the batch.
	from map[int]bool
}

// handsOn reports whether a flow control's slots pass from an ending holder to its key's next
// workflow: WORKFLOW scope, strategy QUEUE, and no rate limit (a step start under a rate limit
// is only ever taken by a claim, which accounts for it).
func (c *FlowControlled) handsOn() bool {
	cc := c.Flow.Concurrency
	return c.compileErr == nil && cc != nil && c.Flow.RateLimit == nil && cc.Scope != workflow.ScopeStep &&
		cc.Strategy != workflow.StrategyCancelNewest && cc.Strategy != workflow.StrategyCancelInProgress
}

// planHandoff finds, before a completion's transaction, the outcomes whose slots may pass on:
// those of types that hand slots on, whose step lets the workflow's slot go, and that keep
// accepts (the pool is not draining). It reads the flow controls outside the transaction.
func (e *Engine) planHandoff(ctx context.Context, outcomes []*Outcome, keep func(*Outcome) bool) handoff {
	var h handoff
	if keep == nil {
		return h
	}
	var all map[string]*FlowControlled
	for i, o := range outcomes {
		if o.completion.Status.HoldsSlot() {
			continue
		}
		if all == nil {
			var err error
			if all, err = e.FlowControls(ctx); err != nil || len(all) == 0 {
				return h // the next claim serves the key
			}
		}
		c := all[o.workflow.Type]
		if c == nil || !c.handsOn() || !keep(o) {
			continue
		}
		if h.specs == nil {
			h.specs, h.from = map[string]persistence.FlowSpec{}, map[int]bool{}
		}
		h.specs[c.Type] = c.Spec()
		h.from[i] = true
	}
	return h
}

// run claims, in the completion's transaction tx, the successors of the written outcomes among
// h.from: for each key, as many of its due workflows as its written holders let go.
func (h handoff) run(ctx context.Context, e *Engine, tx *persistence.Store, outcomes []*Outcome, written map[int64]bool,
	now time.Time) ([]*persistence.Workflow, error) {
	if len(h.from) == 0 {
		return nil, nil
	}
	type claimant struct {
		typ, group string
		executor   int64
	}
	freed := map[claimant]map[string]int{}
	for i := range h.from {
		o := outcomes[i]
		if !written[o.workflow.ID] {
			continue
		}
		c := claimant{o.workflow.Type, o.group, o.executorID}
		if freed[c] == nil {
			freed[c] = map[string]int{}
		}
		freed[c][o.ConcurrencyKey()]++
	}
	var out []*persistence.Workflow
	for c, keys := range freed {
		n := 0
		for _, k := range keys {
			n += k
		}
		p := persistence.WorkflowClaimParams{ExecutorID: c.executor, Group: c.group, Limit: n, Now: now,
			StepDeadline: now.Add(workflow.DefaultStepTimeout), StepTimeouts: e.StepTimeouts(c.group)}
		ws, err := tx.WorkflowFlowHandoff(ctx, p, h.specs[c.typ], keys)
		if err != nil {
			return nil, err
		}
		out = append(out, ws...)
	}
	return out, nil
}

// maxFlowKeyHints bounds the per-key hints one commit of starts sends; past it, the group is woken.
const maxFlowKeyHints = 16

// wakeForStarts hints, for the due workflows a commit of starts created, each one's concurrency key
// when they are few (a pool then claims for those keys alone, without walking every key of a
// flow-controlled type), and adds to wake the groups of the others.
func (e *Engine) wakeForStarts(due []*persistence.Workflow, wake map[string]bool) map[string]bool {
	keyed := 0
	for _, w := range due {
		if w.ConcurrencyKey != nil {
			keyed++
		}
	}
	for _, w := range due {
		if w.ConcurrencyKey != nil && keyed <= maxFlowKeyHints {
			e.notifier.Notify(persistence.TopicFlowKey, persistence.FlowKeyPayload(w.ExecutorGroup, w.Type, *w.ConcurrencyKey))
			continue
		}
		wake[w.ExecutorGroup] = true
	}
	return wake
}
