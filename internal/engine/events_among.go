package engine

import (
	"context"

	"github.com/cairnflow/cairn/workflow"
)

// waitingAmong adds to ids the WAITING workflows whose state takes a signal of several names (or
// any) among which is name, up to workflow.MaxEventDeliveries in all.
func (e *Engine) waitingAmong(ctx context.Context, name string, ids []int64) ([]int64, error) {
	left := workflow.MaxEventDeliveries - int64(len(ids))
	if left <= 0 {
		return ids, nil
	}
	const page = 500
	for after := int64(0); ; {
		ws, err := e.store.WorkflowWaitingAmong(ctx, after, page)
		if err != nil {
			return ids, err
		}
		for _, w := range ws {
			after = w.ID
			def, err := e.specOf(ctx, e.store, w)
			if err != nil {
				e.log.Warn("a waiting workflow's definition could not be read to deliver an event", "workflow", w.ID, "error", err)
				continue
			}
			if s, ok := def.State(w.State); ok && s.WaitFor != nil && s.WaitFor.Takes(name) {
				ids = append(ids, w.ID)
				if left--; left == 0 {
					return ids, nil
				}
			}
		}
		if len(ws) < page {
			return ids, nil
		}
	}
}
