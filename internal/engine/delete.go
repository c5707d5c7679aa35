package engine

import (
	"context"
	"errors"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// Delete removes an ended workflow with its history and its descendants (each ended too). A
// workflow still running (or with a descendant still running), or a child whose parent has not
// ended, is a CONFLICT: cancel it first.
func (e *Engine) Delete(ctx context.Context, p workflow.DeleteParams) error {
	if err := firstError(workflow.CheckString("reason", p.Reason, workflow.MaxTextLength),
		workflow.CheckString("actor", p.Actor, workflow.MaxKeyLength)); err != nil {
		return err
	}
	return e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		w, err := tx.WorkflowGet(ctx, p.ID)
		if err == nil {
			err = e.deleteIn(ctx, tx, p)
		} else if errors.Is(err, persistence.ErrNotFound) {
			return notFound("id", "no workflow %v", workflowRef(p.ID))
		}
		if err != nil {
			return err
		}
		return audit(ctx, tx, p.Actor, "deleteWorkflow", subjectOf(workflow.RefWorkflow, p.ID), p.Reason,
			map[string]any{"type": w.Type, "status": w.Status, "businessKey": w.BusinessKey})
	})
}

// deleteIn is Delete inside transaction tx; it refuses (before writing anything) what Delete
// refuses.
func (e *Engine) deleteIn(ctx context.Context, tx *persistence.Store, p workflow.DeleteParams) error {
	w, err := tx.WorkflowGetForUpdate(ctx, p.ID)
	if errors.Is(err, persistence.ErrNotFound) {
		return notFound("id", "no workflow %v", workflowRef(p.ID))
	} else if err != nil {
		return err
	}
	if !w.Status.Terminal() {
		return conflict("workflow %v is %s; only an ended workflow can be deleted (cancel it first)", workflowRef(w.ID), w.Status)
	}
	if w.ParentID != nil {
		parent, err := tx.WorkflowGet(ctx, *w.ParentID)
		if err != nil && !errors.Is(err, persistence.ErrNotFound) {
			return err
		}
		if err == nil && !parent.Status.Terminal() {
			return conflict("the parent of workflow %v (workflow %v) has not ended", workflowRef(w.ID), workflowRef(parent.ID))
		}
	}
	descendants, active, err := tx.WorkflowDescendantIDs(ctx, w.ID)
	if err != nil {
		return err
	}
	if active {
		return conflict("a descendant of workflow %v has not ended", workflowRef(w.ID))
	}
	return tx.WorkflowDelete(ctx, append([]int64{w.ID}, descendants...))
}
