// A step's effects on other workflows (signals, cancellations) are buffered on its StepContext and
// written in the transaction that completes it, like the children it starts: a step that fails, or
// whose completion is fenced off, leaves none of them behind. What a step reads beyond its own
// workflow it reads through the StepContext's Reader.

package workflow

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/cairnflow/cairn/persistence"
)

// SignalRequest is a signal a step sends to another workflow, delivered when the step completes.
type SignalRequest struct {
	ID      int64
	Name    string
	Payload json.RawMessage
	// IdempotencyKey delivers the signal once per key and workflow. A signal whose key another
	// request took is not delivered, and neither are its Cancels: a claim only one step can make.
	IdempotencyKey string
	// Cancels are the workflows to cancel once the signal is delivered (the losers of a race).
	Cancels []CancelRequest
}

// CancelRequest is a workflow a step cancels, with its descendants, when the step completes. One
// that has ended by then is left as it is.
type CancelRequest struct {
	ID     int64
	Reason string
}

// stepActor is who the changes a step makes to other workflows are recorded as made by.
const stepActor = "cairn"

// SendSignal asks for a signal to another workflow, delivered in the transaction that completes
// this step. A signal no workflow could take (no name, a payload that is not JSON or over the
// engine's Limits) is refused now.
func (c *StepContext) SendSignal(req SignalRequest) error {
	if err := c.engine.checkSignal(req.params()); err != nil {
		return err
	}
	for _, cr := range req.Cancels {
		if err := cr.params().validate(); err != nil {
			return err
		}
	}
	c.signals = append(c.signals, req)
	return nil
}

// CancelWorkflow asks for a workflow (and its descendants) to be cancelled in the transaction that
// completes this step.
func (c *StepContext) CancelWorkflow(req CancelRequest) error {
	if err := req.params().validate(); err != nil {
		return err
	}
	c.cancels = append(c.cancels, req)
	return nil
}

func (r SignalRequest) params() SignalParams {
	return SignalParams{ID: r.ID, Name: r.Name, Payload: r.Payload, IdempotencyKey: r.IdempotencyKey, Actor: stepActor}
}

func (r CancelRequest) params() ChangeParams {
	return ChangeParams{ID: r.ID, Reason: r.Reason, Actor: stepActor}
}

// Reader is what a step may read beyond its own workflow.
type Reader interface {
	// Children lists the newest children of workflow parent, newest first, at most limit.
	Children(ctx context.Context, parent int64, limit int) ([]*persistence.Workflow, error)
	// Signals lists the signals sent to a workflow named name, oldest first.
	Signals(ctx context.Context, id int64, name string) ([]*persistence.Signal, error)
	// Definition returns version of definition typ (0: the newest); persistence.ErrNotFound when
	// there is none.
	Definition(ctx context.Context, typ string, version int) (*persistence.Definition, error)
	// DeployedVersion returns the newest deployed version of typ whose document version is label
	// (see Engine.DeployedVersion).
	DeployedVersion(ctx context.Context, typ, label string) (*persistence.Definition, error)
}

// Reader returns what the step may read beyond its own workflow.
func (c *StepContext) Reader() Reader { return stepReader{c.engine} }

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
func (e *Engine) applyEffects(ctx context.Context, tx *persistence.Store, written []*outcome, wake map[string]bool) ([]*persistence.Workflow, error) {
	var interrupt []*persistence.Workflow
	for _, o := range written {
		for _, s := range o.signals {
			delivered, err := e.deliver(ctx, tx, s.params(), wake)
			if err != nil {
				return nil, err
			}
			if !delivered {
				continue
			}
			for _, c := range s.Cancels {
				if interrupt, err = e.cancelIn(ctx, tx, c.params(), wake, interrupt); err != nil {
					return nil, err
				}
			}
		}
		for _, c := range o.cancels {
			var err error
			if interrupt, err = e.cancelIn(ctx, tx, c.params(), wake, interrupt); err != nil {
				return nil, err
			}
		}
	}
	return interrupt, nil
}

// deliver delivers a step's signal in tx; false when it cannot be (its workflow is gone or ended,
// or another request took its idempotency key).
func (e *Engine) deliver(ctx context.Context, tx *persistence.Store, p SignalParams, wake map[string]bool) (bool, error) {
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
func (e *Engine) cancelIn(ctx context.Context, tx *persistence.Store, p ChangeParams, wake map[string]bool, interrupt []*persistence.Workflow) ([]*persistence.Workflow, error) {
	var cascaded []*persistence.Workflow
	w, interrupted, err := e.changeIn(ctx, tx, "cancel", p, e.cancelling(p, &cascaded), wake)
	if refused(err) {
		return interrupt, nil // it ended meanwhile
	} else if err != nil {
		return nil, err
	}
	if interrupted {
		interrupt = append(interrupt, w)
	}
	return append(interrupt, cascaded...), nil
}

// refused reports whether an operation was refused without writing anything: its workflow is gone,
// or its state does not allow it.
func refused(err error) bool {
	var we *Error
	return errors.As(err, &we) && (we.Code == CodeConflict || we.Code == CodeNotFound)
}
