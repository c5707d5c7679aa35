package engine

import (
	"context"
	"errors"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// Rerun starts a new workflow of an ended one's type, with its input or a new one, from the start
// or a named state, of the same definition version (the newest with Latest), and links it to the
// original. A workflow that has not ended is a CONFLICT; so is an OFFLINE definition.
func (e *Engine) Rerun(ctx context.Context, p workflow.RerunParams) (*persistence.Workflow, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var out *persistence.Workflow
	wake := map[string]bool{}
	err := e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		clear(wake)
		orig, err := tx.WorkflowGet(ctx, p.ID)
		if errors.Is(err, persistence.ErrNotFound) {
			return notFound("id", "no workflow %v", workflowRef(p.ID))
		} else if err != nil {
			return err
		}
		if !orig.Status.Terminal() {
			return conflict("workflow %v is %s; only an ended workflow can be rerun", workflowRef(orig.ID), orig.Status)
		}
		get := persistence.DefinitionGetParams{Type: orig.Type, Version: orig.DefinitionVersion}
		if p.Latest {
			get.Version = 0
		}
		def, err := tx.DefinitionGet(ctx, get)
		if err != nil {
			return err
		}
		if err := startable(def, "id"); err != nil {
			return err
		}
		spec, err := e.specOfRow(def)
		if err != nil {
			return err
		}
		input := orig.Input
		if p.Input != nil {
			_, in, err := decodeObject("input", p.Input)
			if err != nil {
				return err
			}
			if err := checkValue(e.limits, "input", in); err != nil {
				return err
			}
			input = in
		}
		state := spec.StartState()
		if p.State != "" {
			s, ok := spec.State(p.State)
			if !ok {
				return invalid("state", "definition %s has no state %q", spec.Type, p.State)
			}
			if s.Kind == workflow.End || s.Kind == workflow.ErrorKind {
				return invalid("state", "state %q is an %s state; a rerun cannot start there", p.State, s.Kind)
			}
			state = s
		}
		now := persistence.Now()
		w := &persistence.Workflow{Type: orig.Type, DefinitionVersion: def.Version, BusinessKey: orig.BusinessKey,
			Status: persistence.StatusCreated, State: state.Name, NextActivation: &now, Priority: orig.Priority,
			ExecutorGroup: def.ExecutorGroup, Input: input, Variables: []byte(`{}`), Created: now, Modified: now}
		if state.Kind != workflow.Start {
			enterState(w, state, now, now)
		}
		if err := tx.WorkflowInsertMany(ctx, []*persistence.Workflow{w}); err != nil {
			return err
		}
		if err := tx.RerunInsert(ctx, &persistence.WorkflowRerun{WorkflowID: w.ID, RerunOf: orig.ID}); err != nil {
			return err
		}
		if err := tx.ChangeEventInsertMany(ctx, []*persistence.ChangeEvent{{WorkflowID: w.ID, Type: workflow.EventCreated,
			Status: w.Status, State: w.State, At: now}}); err != nil {
			return err
		}
		if w.NextActivation != nil && claimable(w.Status) {
			wake[w.ExecutorGroup] = true
		}
		out = w
		return audit(ctx, tx, p.Actor, "rerunWorkflow", subjectOf(workflow.RefWorkflow, orig.ID), p.Reason,
			map[string]any{"rerun": subjectOf(workflow.RefWorkflow, w.ID), "version": def.Version, "state": w.State, "newInput": p.Input != nil})
	})
	if err != nil {
		return nil, err
	}
	e.afterCommit(wake, true)
	return out, nil
}
