package engine

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// Signal delivers a message to a workflow. A workflow waiting for it wakes at once; one that is not
// waiting yet keeps it until a WAIT state asks for it. The same idempotency key delivers once.
func (e *Engine) Signal(ctx context.Context, p workflow.SignalParams) (*persistence.Workflow, error) {
	if err := e.checkSignal(p); err != nil {
		return nil, err
	}
	var out *persistence.Workflow
	var woke bool
	err := e.idempotentTx(ctx, p.IdempotencyKey, func(ctx context.Context, tx *persistence.Store) error {
		var err error
		out, woke, err = e.signalIn(ctx, tx, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	wake := map[string]bool{}
	if woke {
		wake[out.ExecutorGroup] = true
	}
	e.afterCommit(wake, true)
	return out, nil
}

// checkSignal refuses a signal that cannot be delivered to any workflow.
func (e *Engine) checkSignal(p workflow.SignalParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if p.Name == "" {
		return invalid("name", "a signal needs a name")
	}
	if len(p.Payload) > 0 && !json.Valid(p.Payload) {
		return invalid("payload", "payload must be JSON")
	}
	return checkValue(e.limits, "payload", p.Payload)
}

// signalIn delivers a checked signal inside transaction tx and reports whether it woke its
// workflow; a signal that was delivered already with its idempotency key changes nothing.
func (e *Engine) signalIn(ctx context.Context, tx *persistence.Store, p workflow.SignalParams) (out *persistence.Workflow, woke bool, err error) {
	err = func() error {
		if done, err := replay(ctx, tx, "signal", p.ID, p.IdempotencyKey, hashSignal(p)); done != nil || err != nil {
			out = done
			return err
		}
		// Lock the row before the signal's insert takes its key-share lock on it: two signals that
		// each held that lock and then asked for the row (to wake it) deadlocked.
		w, err := tx.WorkflowGetForUpdate(ctx, p.ID)
		if errors.Is(err, persistence.ErrNotFound) {
			return notFound("id", "no workflow %v", workflowRef(p.ID))
		} else if err != nil {
			return err
		}
		if w.Status.Terminal() {
			return conflict("workflow %v is %s and takes no signals", workflowRef(w.ID), w.Status)
		}
		sig := &persistence.Signal{WorkflowID: w.ID, Name: p.Name, Payload: p.Payload, IdempotencyKey: strPtr(p.IdempotencyKey)}
		if err := tx.SignalInsert(ctx, sig); err != nil {
			return err
		}
		woken, err := tx.WorkflowWake(ctx, persistence.WorkflowWakeParams{IDs: []int64{w.ID}, Signal: p.Name, Now: persistence.Now()})
		if err != nil {
			return err
		}
		woke = len(woken) > 0
		if out, err = tx.WorkflowGet(ctx, w.ID); err != nil {
			return err
		}
		evType := workflow.EventSignaled
		if woke {
			evType = workflow.EventWoken
		}
		if err := tx.ChangeEventInsertMany(ctx, []*persistence.ChangeEvent{{WorkflowID: w.ID, Type: evType, Status: out.Status, State: out.State}}); err != nil {
			return err
		}
		return remember(ctx, tx, "signal", p.ID, p.IdempotencyKey, hashSignal(p))
	}()
	if err != nil {
		return nil, false, err
	}
	return out, woke, nil
}
