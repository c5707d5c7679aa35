package graph

import (
	"context"
	"sync"

	"github.com/cairnflow/cairn/graph/model"
	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// flowControlInput converts setFlowControl's input to the SDK's flow control; a period that does
// not parse is an INVALID_INPUT on rateLimit.period.
func flowControlInput(in model.SetFlowControlInput) (workflow.FlowControl, error) {
	var fc workflow.FlowControl
	if c := in.Concurrency; c != nil {
		fc.Concurrency = &workflow.Concurrency{Limit: c.Limit, Key: str(c.Key)}
		if c.Scope != nil {
			fc.Concurrency.Scope = workflow.ConcurrencyScope(*c.Scope)
		}
		if c.Strategy != nil {
			fc.Concurrency.Strategy = workflow.ConcurrencyStrategy(*c.Strategy)
		}
	}
	if rl := in.RateLimit; rl != nil {
		fc.RateLimit = &workflow.RateLimit{Limit: rl.Limit, Key: str(rl.Key)}
		if rl.Limit <= 0 {
			return fc, invalidInput("rateLimit.limit", "a rate limit must be at least 1")
		}
		d, err := workflow.ParsePeriod("rateLimit.period", rl.Period)
		if err != nil {
			return fc, err
		}
		fc.RateLimit.Period = d
	}
	return fc, nil
}

func (r *Resolver) flowControlPayload(ctx context.Context, c *engine.FlowControlled) (*model.FlowControlPayload, error) {
	if c == nil {
		return &model.FlowControlPayload{}, nil
	}
	m, err := r.flowControlModel(ctx, c)
	if err != nil {
		return nil, err
	}
	return &model.FlowControlPayload{FlowControl: m}, nil
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// flowControlModel is a flow control in force with its keys' counts.
func (r *Resolver) flowControlModel(ctx context.Context, c *engine.FlowControlled) (*model.FlowControl, error) {
	m := &model.FlowControl{Type: c.Type, Source: model.FlowControlSource(c.Source), Keys: []*model.FlowKeyCount{}}
	if cc := c.Flow.Concurrency; cc != nil {
		m.Concurrency = &model.Concurrency{Limit: cc.Limit, Scope: model.ConcurrencyScope(cc.Scope), Key: optString(cc.Key),
			Strategy: model.ConcurrencyStrategy(cc.Strategy)}
	}
	if rl := c.Flow.RateLimit; rl != nil {
		m.RateLimit = &model.RateLimit{Limit: rl.Limit, PeriodMs: int(min(rl.Period.Milliseconds(), 1<<31-1)), Key: optString(rl.Key)}
	}
	counts, err := r.engine.FlowKeyCounts(ctx, c)
	if err != nil {
		return nil, err
	}
	for _, k := range counts {
		if k.Running > 0 || k.Waiting > 0 {
			m.Keys = append(m.Keys, &model.FlowKeyCount{Key: k.Key, Running: k.Running, Waiting: k.Waiting})
		}
	}
	return m, nil
}

// flowBlocks caches, for one response, what holds each flow-controlled type back: a page of
// workflows costs one read per type, not one per workflow.
type flowBlocks struct {
	mu     sync.Mutex
	byType map[string]*flowBlockEntry
}

type flowBlockEntry struct {
	once  sync.Once
	block *engine.FlowBlock
	err   error
}

func (r *workflowResolver) blockedReason(ctx context.Context, w *persistence.Workflow) (*string, error) {
	if w.ExecutorID != nil || w.NextActivation == nil || w.Status.Terminal() {
		return nil, nil
	}
	l := loadersFor(ctx, r.store)
	l.flow.mu.Lock()
	if l.flow.byType == nil {
		l.flow.byType = map[string]*flowBlockEntry{}
	}
	e := l.flow.byType[w.Type]
	if e == nil {
		e = &flowBlockEntry{}
		l.flow.byType[w.Type] = e
	}
	l.flow.mu.Unlock()
	e.once.Do(func() { e.block, e.err = r.engine.FlowBlockOf(ctx, w.Type) })
	if e.err != nil || e.block == nil {
		return nil, e.err
	}
	if w.DataOmitted && e.block.NeedsInput() {
		full, err := r.withData(ctx, w)
		if err != nil {
			return nil, err
		}
		w = full
	}
	return optString(e.block.Reason(w)), nil
}
