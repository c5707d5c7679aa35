// A step's effects on other workflows (signals, cancellations) are buffered on its StepContext and
// written in the transaction that completes it, like the children it starts: a step that fails, or
// whose completion is fenced off, leaves none of them behind. What a step reads beyond its own
// workflow it reads through the StepContext's Reader.

package engine

import (
	"context"
	"errors"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// stepActor is who the changes a step makes to other workflows are recorded as made by.
const stepActor = "cairn"

func signalParamsOf(r workflow.SignalRequest) workflow.SignalParams {
	return workflow.SignalParams{ID: r.ID, Name: r.Name, Payload: r.Payload, IdempotencyKey: r.IdempotencyKey, Actor: stepActor}
}

func changeParamsOf(r workflow.CancelRequest) workflow.ChangeParams {
	return workflow.ChangeParams{ID: r.ID, Reason: r.Reason, Actor: stepActor}
}

type stepReader struct{ e *Engine }

func (r stepReader) Children(ctx context.Context, parent int64, limit int) ([]*persistence.Workflow, error) {
	ws, _, err := r.e.store.WorkflowList(ctx, persistence.WorkflowListParams{
		Filter: persistence.WorkflowFilter{ParentID: &parent}, Desc: true, Limit: limit})
	return ws, err
}

func (r stepReader) Signals(ctx context.Context, id int64, name string) ([]*persistence.Signal, error) {
	all, err := r.e.store.SignalList(ctx, []int64{id})
	if err != nil {
		return nil, err
	}
	var out []*persistence.Signal
	for _, s := range all {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out, nil
}

func (r stepReader) Definition(ctx context.Context, typ string, version int) (*persistence.Definition, error) {
	return r.e.store.DefinitionGet(ctx, persistence.DefinitionGetParams{Type: typ, Version: version})
}

func (r stepReader) DeployedVersion(ctx context.Context, typ, label string) (*persistence.Definition, error) {
	return r.e.DeployedVersion(ctx, typ, label)
}

// applyEffects delivers the signals and cancellations the steps of written outcomes asked for,
// inside the transaction that writes them. It marks in wake the executor groups to wake once tx
// commits and returns the workflows whose running steps are to be interrupted then.
func (e *Engine) applyEffects(ctx context.Context, tx *persistence.Store, written []*Outcome, wake map[string]bool) ([]*persistence.Workflow, error) {
	var interrupt []*persistence.Workflow
	for _, o := range written {
		for _, s := range o.signals {
			delivered, err := e.deliver(ctx, tx, signalParamsOf(s), wake)
			if err != nil {
				return nil, err
			}
			if !delivered {
				continue
			}
			for _, c := range s.Cancels {
				if interrupt, err = e.cancelIn(ctx, tx, changeParamsOf(c), wake, interrupt); err != nil {
					return nil, err
				}
			}
		}
		for _, c := range o.cancels {
			var err error
			if interrupt, err = e.cancelIn(ctx, tx, changeParamsOf(c), wake, interrupt); err != nil {
				return nil, err
			}
		}
	}
	return interrupt, nil
}

// deliver delivers a step's signal in tx; false when it cannot be (its workflow is gone or ended,
// or another request took its idempotency key).
func (e *Engine) deliver(ctx context.Context, tx *persistence.Store, p workflow.SignalParams, wake map[string]bool) (bool, error) {
	// Locked before its idempotency key is read: a concurrent request with the same key has
	// committed or waits for this transaction.
	if err := tx.WorkflowLock(ctx, []int64{p.ID}); err != nil {
		return false, err
	}
	w, woke, err := e.signalIn(ctx, tx, p)
	if refused(err) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if woke {
		wake[w.ExecutorGroup] = true
	}
	return true, nil
}

// cancelIn cancels a workflow and its descendants in tx, unless it has ended, and adds those whose
// running steps are to be interrupted to interrupt.
func (e *Engine) cancelIn(ctx context.Context, tx *persistence.Store, p workflow.ChangeParams, wake map[string]bool, interrupt []*persistence.Workflow) ([]*persistence.Workflow, error) {
	_, stopped, err := e.changeIn(ctx, tx, e.cancelOp(), p, wake)
	if refused(err) {
		return interrupt, nil // it ended meanwhile
	} else if err != nil {
		return nil, err
	}
	return append(interrupt, stopped...), nil
}

// refused reports whether an operation was refused without writing anything: its workflow is gone,
// or its state does not allow it.
func refused(err error) bool {
	var we *workflow.Error
	return errors.As(err, &we) && (we.Code == workflow.CodeConflict || we.Code == workflow.CodeNotFound)
}
