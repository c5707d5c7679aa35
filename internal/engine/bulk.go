package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// Bulk operations: an operator's action on every workflow a filter matched when the operation
// started. StartBulk snapshots the targets (one row each) in the transaction that stores the
// operation; a runner on any node leases the operation and works through the targets in batches
// (RunBulk), each batch one transaction that changes its workflows through the same code as the
// single operations (with their actions and change events) and marks their
// targets done. A node killed mid-batch commits nothing of it; once its lease runs out another
// node's runner carries on from the targets still pending, so no workflow is changed twice.

// bulkStatuses are the statuses each action applies to: a dry run counts the targets in them as
// what the action would change.
var bulkStatuses = map[string][]persistence.Status{
	workflow.BulkRetry: {persistence.StatusManual, persistence.StatusFailed},
	workflow.BulkCancel: {persistence.StatusCreated, persistence.StatusInProgress, persistence.StatusExecuting, persistence.StatusWaiting,
		persistence.StatusPaused, persistence.StatusManual},
	workflow.BulkPause:  {persistence.StatusCreated, persistence.StatusInProgress, persistence.StatusWaiting, persistence.StatusExecuting},
	workflow.BulkResume: {persistence.StatusPaused},
	workflow.BulkSignal: {persistence.StatusCreated, persistence.StatusInProgress, persistence.StatusExecuting, persistence.StatusWaiting,
		persistence.StatusPaused, persistence.StatusManual},
	workflow.BulkDelete: persistence.TerminalStatuses(),
}

func bulkRef(id int64) workflow.Ref { return workflow.Ref{Kind: workflow.RefBulkOperation, ID: id} }

// BulkWake is signalled when this node starts a bulk operation: its runner looks at once.
func (e *Engine) BulkWake() <-chan struct{} { return e.bulkWake }

// checkBulk refuses a bulk operation that cannot run.
func (e *Engine) checkBulk(p workflow.BulkParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if !slices.Contains(workflow.BulkActions, p.Action) {
		return invalid("action", "unknown action %q (one of %v)", p.Action, workflow.BulkActions)
	}
	if p.Filter.Empty() && !p.All && !p.DryRun {
		return invalid("filter", "an empty filter selects every workflow: narrow it, or say all: true (or try it with dryRun)")
	}
	if p.State != "" && p.Action != workflow.BulkRetry {
		return invalid("state", "only a RETRY takes a state")
	}
	if p.Action == workflow.BulkSignal {
		if p.SignalName == "" {
			return invalid("signal.name", "a SIGNAL needs a signal name")
		}
		if err := checkValue(e.limits, "signal.payload", p.SignalPayload); err != nil {
			return err
		}
	} else if p.SignalName != "" || len(p.SignalPayload) > 0 {
		return invalid("signal", "only a SIGNAL takes a signal")
	}
	return nil
}

// StartBulk starts a bulk operation: it stores the operation with a snapshot of its targets (every
// workflow the filter matches now; one that matches later is not touched) for the runners to work
// on. A dry run stores the counts alone, SUCCEEDED at once, and changes nothing.
func (e *Engine) StartBulk(ctx context.Context, p workflow.BulkParams) (*persistence.BulkOperation, error) {
	if err := e.checkBulk(p); err != nil {
		return nil, err
	}
	filter := p.FilterDoc
	if len(filter) == 0 {
		var err error
		if filter, err = json.Marshal(p.Filter); err != nil {
			return nil, fmt.Errorf("error encoding a bulk operation's filter: %w", err)
		}
	}
	var out *persistence.BulkOperation
	err := e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		op := &persistence.BulkOperation{Action: p.Action, Status: persistence.BulkPending, DryRun: p.DryRun, Filter: filter,
			Reason: strPtr(p.Reason), Actor: actorOr(p.Actor), State: strPtr(p.State), SignalName: strPtr(p.SignalName), SignalPayload: p.SignalPayload}
		eligible := p.Filter
		eligible.Statuses = intersect(p.Filter.Statuses, bulkStatuses[p.Action])
		if len(eligible.Statuses) > 0 {
			n, err := tx.WorkflowCount(ctx, eligible)
			if err != nil {
				return err
			}
			op.WouldChange = int64(n)
		}
		if p.DryRun {
			n, err := tx.WorkflowCount(ctx, p.Filter)
			if err != nil {
				return err
			}
			now := persistence.Now()
			op.Total, op.Status, op.Finished = int64(n), persistence.BulkSucceeded, &now
		}
		if err := tx.BulkOperationInsert(ctx, op, p.Filter); err != nil {
			return err
		}
		if !p.DryRun {
			if err := audit(ctx, tx, op.Actor, "startBulkOperation", subjectOf(workflow.RefBulkOperation, op.ID), p.Reason,
				map[string]any{"action": op.Action, "total": op.Total, "filter": json.RawMessage(filter)}); err != nil {
				return err
			}
		}
		if !p.DryRun && op.Total == 0 {
			now := persistence.Now()
			op.Status, op.Finished = persistence.BulkSucceeded, &now
			if err := tx.BulkOperationSave(ctx, op); err != nil {
				return err
			}
		}
		out = op
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !out.Status.Ended() {
		select {
		case e.bulkWake <- struct{}{}:
		default:
		}
	}
	return out, nil
}

// intersect returns the statuses of want that filter lets through (all of want when filter is
// empty), never nil unless none.
func intersect(filter, want []persistence.Status) []persistence.Status {
	if len(filter) == 0 {
		return slices.Clone(want)
	}
	var out []persistence.Status
	for _, s := range filter {
		if slices.Contains(want, s) {
			out = append(out, s)
		}
	}
	return out
}

// CancelBulk stops a bulk operation for actor: no target still pending is changed (a batch being
// written commits first). An operation that has ended is a CONFLICT.
func (e *Engine) CancelBulk(ctx context.Context, id int64, actor string) (*persistence.BulkOperation, error) {
	var out *persistence.BulkOperation
	err := e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		op, err := tx.BulkOperationGet(ctx, id)
		if errors.Is(err, persistence.ErrNotFound) {
			return notFound("id", "no bulk operation %v", bulkRef(id))
		} else if err != nil {
			return err
		}
		if op.Status.Ended() {
			return conflict("bulk operation %v is already %s", bulkRef(id), op.Status)
		}
		now := persistence.Now()
		op.Status, op.Finished, op.LeaseOwner, op.LeaseUntil = persistence.BulkCancelled, &now, nil, nil
		out = op
		if err := tx.BulkOperationSave(ctx, op); err != nil {
			return err
		}
		return audit(ctx, tx, actor, "cancelBulkOperation", subjectOf(workflow.RefBulkOperation, id), "", map[string]any{"processed": op.Processed})
	})
	return out, err
}

// BulkOperation returns a bulk operation, NOT_FOUND when there is none.
func (e *Engine) BulkOperation(ctx context.Context, id int64) (*persistence.BulkOperation, error) {
	op, err := e.store.BulkOperationGet(ctx, id)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, notFound("id", "no bulk operation %v", bulkRef(id))
	}
	return op, err
}

func actorOr(actor string) string {
	if actor == "" {
		return "api"
	}
	return actor
}
