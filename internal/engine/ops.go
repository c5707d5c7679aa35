package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// changeFunc is an operation's change of a workflow locked in transaction tx: it returns the
// variables it set (or nil), or an error (before anything is written) when it refuses.
type changeFunc = func(ctx context.Context, tx *persistence.Store, w *persistence.Workflow, def *workflow.Definition) (map[string]json.RawMessage, error)

// hashChange fingerprints an operation's request: its reason and the rest of the request, which
// the operation passes (nil: none).
func hashChange(op string, p workflow.ChangeParams, request any) string {
	return requestHash(op, p.Reason, request)
}

// change runs an operation on one workflow in a transaction of its own (changeIn), then
// interrupts the running steps it stopped and wakes the executor groups it made due.
func (e *Engine) change(ctx context.Context, op changeOp, p workflow.ChangeParams) (*persistence.Workflow, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var out *persistence.Workflow
	var interrupt []*persistence.Workflow
	wake := map[string]bool{}
	err := e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		clear(wake)
		var err error
		out, interrupt, err = e.changeIn(ctx, tx, op, p, wake)
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, w := range interrupt {
		// Paused or cancelled while its step ran: the step sees its context cancelled.
		e.interrupt(w.ID, w.Version)
	}
	e.afterCommit(wake, true)
	return out, nil
}

func claimable(s persistence.Status) bool {
	return s == persistence.StatusCreated || s == persistence.StatusInProgress || s == persistence.StatusWaiting
}

// specOf returns the definition a workflow runs: this node's registered one when its version
// matches, else the stored spec of the workflow's version (states without handlers).
func (e *Engine) specOf(ctx context.Context, store *persistence.Store, w *persistence.Workflow) (*workflow.Definition, error) {
	if d := e.cachedSpec(w.Type, w.DefinitionVersion); d != nil {
		return d, nil
	}
	row, err := store.DefinitionGet(ctx, persistence.DefinitionGetParams{Type: w.Type, Version: w.DefinitionVersion})
	if err != nil {
		return nil, err
	}
	return e.specOfRow(row)
}

// specOfRow is specOf for a definition row already read.
func (e *Engine) specOfRow(row *persistence.Definition) (*workflow.Definition, error) {
	if d := e.cachedSpec(row.Type, row.Version); d != nil {
		return d, nil
	}
	d, err := e.parseRow(row)
	if err != nil {
		return nil, err
	}
	e.specs.Store(persistence.DefinitionKey{Type: row.Type, Version: row.Version}, d)
	return d, nil
}

// cachedSpec returns a definition version without reading the database: the one registered on
// this node, or one read before (a stored version never changes); nil when neither.
func (e *Engine) cachedSpec(typ string, version int) *workflow.Definition {
	e.mu.RLock()
	r, ok := e.defs[typ]
	e.mu.RUnlock()
	if ok && r.row.Version == version {
		return &r.def
	}
	if d, ok := e.specs.Load(persistence.DefinitionKey{Type: typ, Version: version}); ok {
		return d.(*workflow.Definition)
	}
	return nil
}

// Retry runs a MANUAL or FAILED workflow again from a state (the one that failed by default), with
// its retry count reset.
func (e *Engine) Retry(ctx context.Context, p workflow.RetryParams) (*persistence.Workflow, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return e.change(ctx, changeOp{name: "retry", request: p.State, fn: retrying(p)}, p.ChangeParams)
}

// retrying is Retry's change of a workflow.
func retrying(p workflow.RetryParams) changeFunc {
	return func(ctx context.Context, tx *persistence.Store, w *persistence.Workflow, def *workflow.Definition) (map[string]json.RawMessage, error) {
		if w.Status != persistence.StatusManual && w.Status != persistence.StatusFailed {
			return nil, conflict("workflow %v is %s; only MANUAL or FAILED workflows can be retried", workflowRef(w.ID), w.Status)
		}
		state := p.State
		if state == "" {
			state = w.State
			if s, ok := def.State(state); !ok || s.Kind == workflow.End || s.Kind == workflow.ErrorKind || s.Kind == workflow.Manual {
				failed, err := stateBefore(ctx, tx, w)
				if err != nil {
					return nil, err
				}
				if failed == "" {
					return nil, invalid("state", "workflow %v is in state %q; say which state to retry from", workflowRef(w.ID), w.State)
				}
				state = failed
			}
		}
		s, ok := def.State(state)
		if !ok {
			return nil, invalid("state", "definition %s has no state %q", def.Type, state)
		}
		if s.Kind == workflow.End || s.Kind == workflow.ErrorKind {
			return nil, invalid("state", "state %q is an %s state and cannot be retried", state, s.Kind)
		}
		now := clock(ctx)
		w.State = state
		w.Retries = 0
		w.Steps = 0 // an operator's retry starts a new step budget
		w.LastError = nil
		w.Finished = nil
		enterState(w, s, now, now)
		return nil, nil
	}
}

// stateBefore returns the state a workflow was in before it entered its current one: the from-state
// of the latest action that moved it there (a failed step, a step that chose to fail, an
// operator's update), which is where a retry starts by default. "" when no action did.
func stateBefore(ctx context.Context, tx *persistence.Store, w *persistence.Workflow) (string, error) {
	const page = 100
	var after int64 // newest first: each page continues below the last ID seen
	for {
		actions, err := tx.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: []int64{w.ID}, Page: persistence.PageParams{Limit: page, Desc: true, After: after}})
		if err != nil {
			return "", fmt.Errorf("error reading the history of workflow %d: %w", w.ID, err)
		}
		for _, a := range actions {
			if a.State == w.State && a.FromState != nil && *a.FromState != w.State {
				return *a.FromState, nil
			}
		}
		if len(actions) < page {
			return "", nil
		}
		after = actions[len(actions)-1].ID
	}
}

// Pause stops a workflow from being claimed until it is resumed. A step running when it is paused
// sees its context cancelled and is recorded as a CANCELLED task instance; its result is discarded
// and the state runs again after resume, once that attempt has ended (never two at once).
func (e *Engine) Pause(ctx context.Context, p workflow.ChangeParams) (*persistence.Workflow, error) {
	return e.change(ctx, changeOp{name: "pause", fn: pausing}, p)
}

// pausing is Pause's change of a workflow.
func pausing(ctx context.Context, _ *persistence.Store, w *persistence.Workflow, _ *workflow.Definition) (map[string]json.RawMessage, error) {
	switch w.Status {
	case persistence.StatusCreated, persistence.StatusInProgress, persistence.StatusWaiting, persistence.StatusExecuting:
	default:
		return nil, conflict("workflow %v is %s and cannot be paused", workflowRef(w.ID), w.Status)
	}
	if w.Status == persistence.StatusExecuting {
		w.NextActivation = timePtr(clock(ctx))
	}
	w.Status = persistence.StatusPaused
	return nil, nil
}

// Resume makes a PAUSED workflow run again (at its scheduled time, or now).
func (e *Engine) Resume(ctx context.Context, p workflow.ChangeParams) (*persistence.Workflow, error) {
	return e.change(ctx, changeOp{name: "resume", fn: resuming}, p)
}

// resuming is Resume's change of a workflow.
func resuming(ctx context.Context, _ *persistence.Store, w *persistence.Workflow, _ *workflow.Definition) (map[string]json.RawMessage, error) {
	if w.Status != persistence.StatusPaused {
		return nil, conflict("workflow %v is %s; only PAUSED workflows can be resumed", workflowRef(w.ID), w.Status)
	}
	now := clock(ctx)
	w.Status = persistence.StatusInProgress
	if w.NextActivation == nil {
		w.NextActivation = &now
	}
	return nil, nil
}

// Cancel ends a workflow that has not ended, and every descendant that has not ended either: none
// is claimed again and a step running for any of them sees its context cancelled.
func (e *Engine) Cancel(ctx context.Context, p workflow.ChangeParams) (*persistence.Workflow, error) {
	return e.change(ctx, e.cancelOp(), p)
}

// cancelOp is Cancel: it cancels workflows, then their descendants.
func (e *Engine) cancelOp() changeOp {
	return changeOp{name: "cancel", fn: cancelling, cascade: e.cancelDescendants}
}

// cancelling is Cancel's change of a workflow.
func cancelling(ctx context.Context, _ *persistence.Store, w *persistence.Workflow, _ *workflow.Definition) (map[string]json.RawMessage, error) {
	if w.Status.Terminal() {
		return nil, conflict("workflow %v is already %s", workflowRef(w.ID), w.Status)
	}
	cancelWorkflow(w, clock(ctx))
	return nil, nil
}

func cancelWorkflow(w *persistence.Workflow, now time.Time) {
	w.Status = persistence.StatusCancelled
	w.NextActivation = nil
	w.WaitSignal = nil
	w.Finished = &now
}

// cancelDescendants cancels the active descendants of workflows just cancelled, a generation at a
// time with set-based statements, each with its own EXTERNAL_CHANGE action and change event, and
// returns them as they now are.
func (e *Engine) cancelDescendants(ctx context.Context, tx *persistence.Store, roots []*persistence.Workflow, actor string) ([]*persistence.Workflow, error) {
	rootType := map[int64]string{} // by workflow: the type of the ancestor that was cancelled
	parents := make([]int64, len(roots))
	for i, r := range roots {
		rootType[r.ID], parents[i] = r.Type, r.ID
	}
	now := clock(ctx)
	var all []*persistence.Workflow
	for len(parents) > 0 {
		ids, err := tx.WorkflowActiveChildIDs(ctx, parents)
		if err != nil {
			return nil, err
		}
		children, err := tx.WorkflowGetManyForUpdate(ctx, ids)
		if err != nil {
			return nil, err
		}
		parents = parents[:0]
		var saves []persistence.WorkflowChange
		for _, child := range children {
			if child.Status.Terminal() {
				continue
			}
			read := *child
			cancelWorkflow(child, now)
			saves = append(saves, persistence.WorkflowChange{Read: read, W: child})
			rootType[child.ID] = rootType[*child.ParentID]
			parents = append(parents, child.ID)
		}
		if err := tx.WorkflowSaveMany(ctx, saves); err != nil {
			return nil, err
		}
		actions := make([]*persistence.Action, len(saves))
		for i, c := range saves {
			from, text := c.Read.State, fmt.Sprintf("cancel: its ancestor (a %s workflow) was cancelled", rootType[c.W.ID])
			actions[i] = &persistence.Action{WorkflowID: c.W.ID, Type: persistence.ActionExternalChange, FromState: &from, State: c.W.State,
				StateText: &text, RetryNo: c.W.Retries, Actor: &actor, At: c.W.Modified}
		}
		if err := tx.ActionInsertMany(ctx, actions); err != nil {
			return nil, err
		}
		events := make([]*persistence.ChangeEvent, len(saves))
		for i, c := range saves {
			events[i] = &persistence.ChangeEvent{WorkflowID: c.W.ID, Type: string(persistence.ActionExternalChange),
				ActionID: &actions[i].ID, Status: c.W.Status, State: c.W.State, At: c.W.Modified}
			all = append(all, c.W)
		}
		if err := tx.ChangeEventInsertMany(ctx, events); err != nil {
			return nil, err
		}
	}
	return all, nil
}

// Update changes a workflow's state, state text, schedule or variables. It refuses a workflow whose
// step is running (pause it first) and one that has ended (FINISHED, FAILED, CANCELLED): CONFLICT.
func (e *Engine) Update(ctx context.Context, p workflow.UpdateParams) (*persistence.Workflow, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var vars map[string]json.RawMessage
	if len(p.Variables) > 0 {
		m, _, err := decodeObject("variables", p.Variables)
		if err != nil {
			return nil, err
		}
		vars = m
	}
	attrs, err := e.resolveAttributes(ctx, "attributes", p.Attributes, true)
	if err != nil {
		return nil, err
	}
	if p.State == nil && p.StateText == nil && p.NextActivation == nil && !p.ClearNextActivation && vars == nil && attrs == nil {
		return nil, invalid("input", "nothing to update: give state, stateText, nextActivation, variables or attributes")
	}
	request := []any{p.State, p.StateText, timeHash(p.NextActivation), p.ClearNextActivation, canonicalJSON(p.Variables)}
	if attrs != nil {
		request = append(request, canonicalJSON(p.Attributes))
	}
	return e.change(ctx, changeOp{name: "update", request: request, fn: func(ctx context.Context, tx *persistence.Store, w *persistence.Workflow, def *workflow.Definition) (map[string]json.RawMessage, error) {
		if w.Status == persistence.StatusExecuting {
			return nil, conflict("workflow %v is executing a step; pause it before updating it", workflowRef(w.ID))
		}
		// Ended is ended: its variables and state are its record. retryWorkflow reopens a FAILED one.
		if w.Status.Terminal() {
			return nil, conflict("workflow %v is %s and can no longer be changed", workflowRef(w.ID), w.Status)
		}
		now := persistence.Now()
		if p.State != nil {
			s, ok := def.State(*p.State)
			if !ok {
				return nil, invalid("state", "definition %s has no state %q", def.Type, *p.State)
			}
			w.State = s.Name
			w.Retries = 0
			w.Finished = nil
			at := now
			if p.NextActivation != nil {
				at = persistence.UTC(*p.NextActivation)
			}
			enterState(w, s, at, now)
		} else if p.NextActivation != nil {
			w.NextActivation = persistence.UTCPtr(p.NextActivation)
		} else if p.ClearNextActivation {
			w.NextActivation = nil
		}
		if p.StateText != nil {
			w.StateText = p.StateText
		}
		if err := setAttributes(ctx, tx, "attributes", w.ID, attrs); err != nil {
			return nil, err
		}
		return vars, nil
	}}, p.ChangeParams)
}

// WakeUp makes a scheduled or waiting workflow due now.
func (e *Engine) WakeUp(ctx context.Context, p workflow.ChangeParams) (*persistence.Workflow, error) {
	return e.change(ctx, changeOp{name: "wakeUp", fn: func(_ context.Context, _ *persistence.Store, w *persistence.Workflow, _ *workflow.Definition) (map[string]json.RawMessage, error) {
		if !claimable(w.Status) {
			return nil, conflict("workflow %v is %s and cannot be woken up", workflowRef(w.ID), w.Status)
		}
		if w.Status == persistence.StatusWaiting {
			w.Status = persistence.StatusInProgress
		}
		w.NextActivation = timePtr(persistence.Now())
		return nil, nil
	}}, p)
}

// mergeVariables applies changes (null removes a key) to a variables object.
func mergeVariables(current json.RawMessage, changes map[string]json.RawMessage) (json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if len(current) > 0 {
		if err := json.Unmarshal(current, &m); err != nil {
			return nil, fmt.Errorf("error decoding variables: %w", err)
		}
	}
	for k, v := range changes {
		if string(v) == "null" {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return json.Marshal(m)
}

// actionVariables lists the variable changes of an action as rows.
func actionVariables(workflowID, actionID int64, vars map[string]json.RawMessage) []*persistence.ActionVariable {
	out := make([]*persistence.ActionVariable, 0, len(vars))
	for k, v := range vars {
		out = append(out, &persistence.ActionVariable{WorkflowID: workflowID, ActionID: actionID, Key: k, Value: v})
	}
	return out
}
