package engine

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// formSchemas caches compiled form schemas by definition type, version and state.
type formSchemas struct{ m sync.Map }

type formKey struct {
	typ     string
	version int
	state   string
}

// formSchemaOf returns the compiled form schema of a state of a definition version.
func (e *Engine) formSchemaOf(w *persistence.Workflow, s *workflow.State) (*jsonschema.Schema, error) {
	key := formKey{w.Type, w.DefinitionVersion, s.Name}
	if sch, ok := e.forms.m.Load(key); ok {
		return sch.(*jsonschema.Schema), nil
	}
	sch, err := workflow.CompileFormSchema(w.Type, s.Name, s.FormSchema)
	if err != nil {
		return nil, err
	}
	e.forms.m.Store(key, sch)
	return sch, nil
}

// SubmitForm records the data a person submitted for the user task a workflow waits in: a WAIT
// state (the form arrives as the signal it waits for) or a MANUAL state (the workflow moves on to
// the state's only next state), whose form schema the data must satisfy. The data is also set as
// the variable named after the state. A workflow in another state, or a state without a form, is
// a CONFLICT; data that does not satisfy the schema is INVALID_INPUT on data. Either changes
// nothing.
func (e *Engine) SubmitForm(ctx context.Context, p workflow.SubmitFormParams) (*persistence.Workflow, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	data, raw, err := decodeObject("data", p.Data)
	if err != nil {
		return nil, err
	}
	if err := checkValue(e.limits, "data", raw); err != nil {
		return nil, err
	}
	if p.SubmittedBy == "" {
		return nil, invalid("submittedBy", "say who submits the form")
	}
	var compact any
	if err := json.Unmarshal(p.Data, &compact); err != nil {
		return nil, invalid("data", "must be a JSON object")
	}
	cp := workflow.ChangeParams{ID: p.ID, Reason: "form submitted by " + p.SubmittedBy, Actor: p.SubmittedBy, IdempotencyKey: p.IdempotencyKey}
	return e.change(ctx, changeOp{name: "submitForm", request: []any{canonicalJSON(p.Data), p.Signature}, fn: func(ctx context.Context, tx *persistence.Store, w *persistence.Workflow, def *workflow.Definition) (map[string]json.RawMessage, error) {
		s, ok := def.State(w.State)
		if !ok || len(s.FormSchema) == 0 {
			return nil, conflict("workflow %v is in state %q, which takes no form", workflowRef(w.ID), w.State)
		}
		waiting := s.Kind == workflow.Wait && w.Status == persistence.StatusWaiting && s.WaitFor != nil && s.WaitFor.Signal != ""
		manual := s.Kind == workflow.Manual && w.Status == persistence.StatusManual
		if !waiting && !manual {
			return nil, conflict("workflow %v is %s in state %q and is not waiting for its form", workflowRef(w.ID), w.Status, w.State)
		}
		if manual && len(s.Next) != 1 {
			return nil, conflict("MANUAL state %q has %d next states; move the workflow with updateWorkflow", s.Name, len(s.Next))
		}
		sch, err := e.formSchemaOf(w, s)
		if err != nil {
			return nil, err
		}
		if err := sch.Validate(compact); err != nil {
			return nil, invalid("data", "does not match the form of state %q: %v", s.Name, err)
		}
		raw, _ := json.Marshal(data)
		if err := tx.FormSubmissionInsert(ctx, &persistence.FormSubmission{WorkflowID: w.ID, State: s.Name, Data: raw,
			SubmittedBy: p.SubmittedBy, Signature: strPtr(p.Signature)}); err != nil {
			return nil, err
		}
		now := persistence.Now()
		if waiting {
			// The form is the signal the state waits for; the row is locked, so wake it here.
			if err := tx.SignalInsert(ctx, &persistence.Signal{WorkflowID: w.ID, Name: s.WaitFor.Signal, Payload: raw}); err != nil {
				return nil, err
			}
			w.Status = persistence.StatusInProgress
			w.NextActivation = &now
		} else {
			next, _ := def.State(s.Next[0])
			w.State = next.Name
			w.Retries = 0
			enterState(w, next, now, now)
		}
		return map[string]json.RawMessage{s.Name: raw}, nil
	}}, cp)
}
