package graph

import (
	"context"

	"github.com/cairnflow/cairn/graph/model"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// maxStuckCount bounds the stuck workflows workflowStats counts.
const maxStuckCount = 10000

// stuckRules returns the stuck rules of the response: what serves workflows, read once.
func (r *Resolver) stuckRules(ctx context.Context) (*persistence.StuckRules, error) {
	l := loadersFor(ctx, r.store)
	l.stuckMu.Lock()
	defer l.stuckMu.Unlock()
	if l.stuck != nil {
		return l.stuck, nil
	}
	rules, err := r.store.StuckRulesAt(ctx, persistence.StuckRulesParams{Now: persistence.Now(), DueFor: workflow.StuckDueFor,
		PastDeadline: workflow.StuckPastDeadline, WorkerWithin: workflow.RemoteWorkerAliveWithin})
	if err != nil {
		return nil, err
	}
	l.stuck = rules
	return rules, nil
}

// stuckFilter adds the filter's stuck condition.
func (r *Resolver) stuckFilter(ctx context.Context, f *model.WorkflowFilter, out *persistence.WorkflowFilter) error {
	if f == nil || f.Stuck == nil {
		return nil
	}
	rules, err := r.stuckRules(ctx)
	if err != nil {
		return err
	}
	out.Stuck = &persistence.StuckFilter{Want: *f.Stuck, Rules: rules}
	return nil
}

// stuckReason is why a workflow is stuck ("" when it is not), by the response's rules.
func (r *Resolver) stuckReason(ctx context.Context, w *persistence.Workflow) (string, error) {
	rules, err := r.stuckRules(ctx)
	if err != nil {
		return "", err
	}
	var pending []string
	if w.Status == persistence.StatusWaiting {
		if pending, err = loadersFor(ctx, r.store).pendingRemote.Load(ctx, w.ID)(); err != nil {
			return "", err
		}
	}
	return rules.Reason(w, pending), nil
}

// stuckCount counts the stuck workflows among a filter's.
func (r *Resolver) stuckCount(ctx context.Context, f persistence.WorkflowFilter) (int, error) {
	rules, err := r.stuckRules(ctx)
	if err != nil {
		return 0, err
	}
	f.Stuck = &persistence.StuckFilter{Want: true, Rules: rules}
	c, err := r.store.WorkflowCountUpTo(ctx, f, maxStuckCount)
	if err != nil {
		return 0, err
	}
	return c.N, nil
}
