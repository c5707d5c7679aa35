package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cairnflow/cairn/persistence"
)

// Event types written to the change-event stream besides the action types.
const (
	EventCreated  = "CREATED"
	EventSignaled = "SIGNALED"
	EventWoken    = "WOKEN"
)

// StartParams is the input of Start: a new workflow of a registered, ONLINE type.
type StartParams struct {
	Type string
	// ExternalID is unique per type: starting again with the same one returns the existing workflow.
	ExternalID  string
	BusinessKey string
	LaunchToken string
	// Input is a JSON object handed to the steps (empty: {}).
	Input    json.RawMessage
	Priority int
	// StartAt delays the first step (nil: now).
	StartAt *time.Time
	// IdempotencyKey makes the start idempotent: the same key returns the first result.
	IdempotencyKey string
	// Variables are the initial variables (a JSON object).
	Variables json.RawMessage
}

// StartResult is one started (or found) workflow.
type StartResult struct {
	Workflow *persistence.Workflow
	// Created is false when an existing workflow was returned (same externalId or idempotency key).
	Created bool
}

// Start starts one workflow. See StartMany.
func (e *Engine) Start(ctx context.Context, p StartParams) (StartResult, error) {
	res, err := e.StartMany(ctx, []StartParams{p})
	if err != nil {
		return StartResult{}, err
	}
	return res[0], nil
}

// StartMany starts workflows in one transaction with bulk inserts. A request naming an external ID
// or idempotency key that is already used returns the existing workflow (Created false). Any invalid
// request fails the whole call and starts nothing; the error names the index at fault.
func (e *Engine) StartMany(ctx context.Context, ps []StartParams) ([]StartResult, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	defs := map[string]*persistence.Definition{}
	type prepared struct {
		w *persistence.Workflow
		p StartParams
	}
	items := make([]prepared, len(ps))
	now := persistence.Now()
	for i, p := range ps {
		field := func(f string) string {
			if len(ps) == 1 {
				return f
			}
			return fmt.Sprintf("inputs[%d].%s", i, f)
		}
		if p.Type == "" {
			return nil, invalid(field("type"), "type is required")
		}
		def, ok := defs[p.Type]
		if !ok {
			d, err := e.store.DefinitionGet(ctx, persistence.DefinitionGetParams{Type: p.Type})
			if errors.Is(err, persistence.ErrNotFound) {
				return nil, invalid(field("type"), "no workflow definition of type %q", p.Type)
			} else if err != nil {
				return nil, err
			}
			def, defs[p.Type] = d, d
		}
		if def.ReleaseState != persistence.ReleaseOnline {
			return nil, conflict("workflow definition %q is %s and starts no new workflow", p.Type, def.ReleaseState)
		}
		spec, err := e.specOfRow(def)
		if err != nil {
			return nil, err
		}
		_, input, err := decodeObject(field("input"), p.Input)
		if err != nil {
			return nil, err
		}
		_, vars, err := decodeObject(field("variables"), p.Variables)
		if err != nil {
			return nil, err
		}
		due := now
		if p.StartAt != nil {
			due = persistence.UTC(*p.StartAt)
		}
		items[i] = prepared{p: p, w: &persistence.Workflow{
			Type: p.Type, DefinitionVersion: def.Version, ExternalID: strPtr(p.ExternalID), BusinessKey: strPtr(p.BusinessKey),
			LaunchToken: strPtr(p.LaunchToken), Status: persistence.StatusCreated, State: spec.StartState().Name,
			NextActivation: &due, Priority: p.Priority, ExecutorGroup: def.ExecutorGroup, Input: input, Variables: vars,
			Created: now, Modified: now,
		}}
	}
	results := make([]StartResult, len(ps))
	wake := map[string]bool{}
	for attempt := 0; ; attempt++ {
		clear(wake)
		err := e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
			var fresh []*persistence.Workflow
			var freshIdx []int
			seenExt := map[string]int{}
			for i, it := range items {
				results[i] = StartResult{}
				if it.p.IdempotencyKey != "" {
					id, err := tx.IdempotencyKeyGet(ctx, "start", it.p.IdempotencyKey)
					if err == nil {
						w, err := tx.WorkflowGet(ctx, id)
						if err != nil {
							return err
						}
						results[i] = StartResult{Workflow: w}
						continue
					} else if !errors.Is(err, persistence.ErrNotFound) {
						return err
					}
				}
				if it.p.ExternalID != "" {
					key := it.p.Type + "\x00" + it.p.ExternalID
					if _, dup := seenExt[key]; dup {
						continue // the same external ID earlier in this call: filled in after the insert
					}
					w, err := tx.WorkflowGetByExternalID(ctx, it.p.Type, it.p.ExternalID)
					if err == nil {
						results[i] = StartResult{Workflow: w}
						continue
					} else if !errors.Is(err, persistence.ErrNotFound) {
						return err
					}
					seenExt[key] = i
				}
				w := *it.w
				fresh = append(fresh, &w)
				freshIdx = append(freshIdx, i)
			}
			if err := tx.WorkflowInsertMany(ctx, fresh); err != nil {
				return err
			}
			// The initial variables are recorded as set by "action 0", so the variables as of any
			// action can be rebuilt from the history alone.
			var initial []*persistence.ActionVariable
			for _, w := range fresh {
				if len(w.Variables) > 2 {
					m := map[string]json.RawMessage{}
					if err := json.Unmarshal(w.Variables, &m); err != nil {
						return err
					}
					initial = append(initial, actionVariables(w.ID, 0, m)...)
				}
			}
			if err := tx.ActionVariableInsertMany(ctx, initial); err != nil {
				return err
			}
			events := make([]*persistence.ChangeEvent, 0, len(fresh))
			for k, w := range fresh {
				results[freshIdx[k]] = StartResult{Workflow: w, Created: true}
				events = append(events, &persistence.ChangeEvent{WorkflowID: w.ID, Type: EventCreated, Status: w.Status, State: w.State, At: now})
				if !w.NextActivation.After(now) {
					wake[w.ExecutorGroup] = true
				}
			}
			// Duplicates within the call share the first one's workflow.
			for i, it := range items {
				if results[i].Workflow == nil && it.p.ExternalID != "" {
					results[i] = StartResult{Workflow: results[seenExt[it.p.Type+"\x00"+it.p.ExternalID]].Workflow}
				}
			}
			for i, it := range items {
				if it.p.IdempotencyKey != "" && results[i].Created {
					if err := tx.IdempotencyKeyInsert(ctx, "start", it.p.IdempotencyKey, results[i].Workflow.ID); err != nil {
						return err
					}
				}
			}
			return tx.ChangeEventInsertMany(ctx, events)
		})
		if err == nil {
			break
		}
		// A concurrent start took one of our external IDs or keys: read again, once or twice.
		if errors.Is(err, persistence.ErrConflict) && attempt < 3 {
			continue
		}
		return nil, err
	}
	e.afterCommit(wake, true)
	return results, nil
}

// ChangeParams is the common input of the operations on one workflow.
type ChangeParams struct {
	ID     int64
	Reason string
	// Actor is who asks (recorded on the action).
	Actor string
	// IdempotencyKey makes the operation idempotent: the same key returns the workflow unchanged.
	IdempotencyKey string
}

// RetryParams is the input of Retry.
type RetryParams struct {
	ChangeParams
	// State to run again ("" = the state that failed).
	State string
}

// change loads a workflow in a transaction, lets fn change it, and saves it with an
// EXTERNAL_CHANGE action and a change event. fn returns the variables it set (or nil).
func (e *Engine) change(ctx context.Context, op string, p ChangeParams, fn func(ctx context.Context, tx *persistence.Store, w *persistence.Workflow, def *Definition) (map[string]json.RawMessage, error)) (*persistence.Workflow, error) {
	var out *persistence.Workflow
	wake := map[string]bool{}
	var cancelled bool
	err := e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		if done, err := replay(ctx, tx, op, p.ID, p.IdempotencyKey); done != nil || err != nil {
			out = done
			return err
		}
		w, err := tx.WorkflowGetForUpdate(ctx, p.ID)
		if errors.Is(err, persistence.ErrNotFound) {
			return notFound("id", "no workflow with id %d", p.ID)
		} else if err != nil {
			return err
		}
		def, err := e.specOf(ctx, tx, w)
		if err != nil {
			return err
		}
		fromState, fromStatus := w.State, w.Status
		vars, err := fn(ctx, tx, w, def)
		if err != nil {
			return err
		}
		if len(vars) > 0 {
			merged, err := mergeVariables(w.Variables, vars)
			if err != nil {
				return err
			}
			w.Variables = merged
		}
		if err := tx.WorkflowSave(ctx, w); err != nil {
			return err
		}
		if w.Status == persistence.StatusWaiting && fromStatus != persistence.StatusWaiting {
			// Moved into a WAIT state: what it waits for may have come already.
			if s, ok := def.State(w.State); ok && s.WaitFor != nil {
				woken, err := e.wakeSatisfiedWaits(ctx, tx, []waiter{{id: w.ID, wait: s.WaitFor}}, w.Modified)
				if err != nil {
					return err
				}
				if len(woken) > 0 {
					wake[w.ExecutorGroup] = true
					if w, err = tx.WorkflowGet(ctx, w.ID); err != nil {
						return err
					}
				}
			}
		}
		actor := p.Actor
		if actor == "" {
			actor = "api"
		}
		text := op
		if p.Reason != "" {
			text = op + ": " + p.Reason
		}
		a := &persistence.Action{WorkflowID: w.ID, Type: persistence.ActionExternalChange, FromState: &fromState, State: w.State,
			StateText: &text, RetryNo: w.Retries, Actor: &actor, At: w.Modified}
		if err := tx.ActionInsertMany(ctx, []*persistence.Action{a}); err != nil {
			return err
		}
		if err := tx.ActionVariableInsertMany(ctx, actionVariables(w.ID, a.ID, vars)); err != nil {
			return err
		}
		if err := tx.ChangeEventInsertMany(ctx, []*persistence.ChangeEvent{{WorkflowID: w.ID, Type: string(persistence.ActionExternalChange),
			ActionID: &a.ID, Status: w.Status, State: w.State, At: w.Modified}}); err != nil {
			return err
		}
		if w.Status.Terminal() && !fromStatus.Terminal() && w.ParentID != nil {
			if _, err := tx.WorkflowWake(ctx, persistence.WorkflowWakeParams{IDs: []int64{*w.ParentID}, Now: w.Modified}); err != nil {
				return err
			}
			wake[w.ExecutorGroup] = true
		}
		if w.NextActivation != nil && !w.NextActivation.After(w.Modified) && claimable(w.Status) {
			wake[w.ExecutorGroup] = true
		}
		cancelled = w.Status == persistence.StatusCancelled && fromStatus == persistence.StatusExecuting
		if err := remember(ctx, tx, op, p.ID, p.IdempotencyKey); err != nil {
			return err
		}
		out = w
		return nil
	})
	if err != nil {
		return nil, err
	}
	if cancelled {
		e.notifier.Notify(persistence.TopicCancel, fmtID(out.ID))
	}
	e.afterCommit(wake, true)
	return out, nil
}

// replay returns the workflow as it is now when an operation on it already ran with this
// idempotency key (nil when it did not, or no key was given): the caller then changes nothing.
func replay(ctx context.Context, tx *persistence.Store, op string, id int64, key string) (*persistence.Workflow, error) {
	if key == "" {
		return nil, nil
	}
	if _, err := tx.IdempotencyKeyGet(ctx, op, fmt.Sprintf("%d/%s", id, key)); errors.Is(err, persistence.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return tx.WorkflowGet(ctx, id)
}

// remember records that an operation on a workflow ran with an idempotency key (if one was given).
func remember(ctx context.Context, tx *persistence.Store, op string, id int64, key string) error {
	if key == "" {
		return nil
	}
	return tx.IdempotencyKeyInsert(ctx, op, fmt.Sprintf("%d/%s", id, key), id)
}

func claimable(s persistence.Status) bool {
	return s == persistence.StatusCreated || s == persistence.StatusInProgress || s == persistence.StatusWaiting
}

// specOf returns the definition a workflow runs: this node's registered one when its version
// matches, else the stored spec of the workflow's version (states without handlers).
func (e *Engine) specOf(ctx context.Context, store *persistence.Store, w *persistence.Workflow) (*Definition, error) {
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
func (e *Engine) specOfRow(row *persistence.Definition) (*Definition, error) {
	if d := e.cachedSpec(row.Type, row.Version); d != nil {
		return d, nil
	}
	d, err := ParseSpec(row.Spec)
	if err != nil {
		return nil, err
	}
	e.specs.Store(persistence.DefinitionKey{Type: row.Type, Version: row.Version}, d)
	return d, nil
}

// cachedSpec returns a definition version without reading the database: the one registered on
// this node, or one read before (a stored version never changes); nil when neither.
func (e *Engine) cachedSpec(typ string, version int) *Definition {
	e.mu.RLock()
	r, ok := e.defs[typ]
	e.mu.RUnlock()
	if ok && r.row.Version == version {
		return &r.def
	}
	if d, ok := e.specs.Load(persistence.DefinitionKey{Type: typ, Version: version}); ok {
		return d.(*Definition)
	}
	return nil
}

// Retry runs a MANUAL or FAILED workflow again from a state (the one that failed by default), with
// its retry count reset.
func (e *Engine) Retry(ctx context.Context, p RetryParams) (*persistence.Workflow, error) {
	return e.change(ctx, "retry", p.ChangeParams, func(ctx context.Context, tx *persistence.Store, w *persistence.Workflow, def *Definition) (map[string]json.RawMessage, error) {
		if w.Status != persistence.StatusManual && w.Status != persistence.StatusFailed {
			return nil, conflict("workflow %d is %s; only MANUAL or FAILED workflows can be retried", w.ID, w.Status)
		}
		state := p.State
		if state == "" {
			state = w.State
			if s, ok := def.State(state); !ok || s.Kind == End || s.Kind == ErrorKind || s.Kind == Manual {
				failed, err := lastFailedState(ctx, tx, w.ID)
				if err != nil {
					return nil, err
				}
				if failed == "" {
					return nil, invalid("state", "workflow %d is in state %q; say which state to retry from", w.ID, w.State)
				}
				state = failed
			}
		}
		s, ok := def.State(state)
		if !ok {
			return nil, invalid("state", "definition %s has no state %q", def.Type, state)
		}
		if s.Kind == End || s.Kind == ErrorKind {
			return nil, invalid("state", "state %q is an %s state and cannot be retried", state, s.Kind)
		}
		now := persistence.Now()
		w.State = state
		w.Retries = 0
		w.LastError = nil
		w.Finished = nil
		enterState(w, s, now, now)
		return nil, nil
	})
}

// lastFailedState returns the state of the workflow's latest failed execution ("" if none).
func lastFailedState(ctx context.Context, tx *persistence.Store, id int64) (string, error) {
	actions, err := tx.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: []int64{id}, Page: persistence.PageParams{Limit: 50, Desc: true}})
	if err != nil {
		return "", err
	}
	for _, a := range actions {
		if a.Type == persistence.ActionStateExecutionFailed && a.FromState != nil {
			return *a.FromState, nil
		}
	}
	return "", nil
}

// enterState sets a workflow's status and schedule for arriving in state s (due at `at`).
func enterState(w *persistence.Workflow, s *State, at, now time.Time) {
	w.WaitSignal = nil
	w.ExecutorID = nil
	w.StepDeadline = nil
	switch s.Kind {
	case Start, Normal:
		w.Status = persistence.StatusInProgress
		w.NextActivation = timePtr(at)
	case Wait:
		w.Status = persistence.StatusWaiting
		w.NextActivation = nil
		if s.Timeout > 0 {
			w.NextActivation = timePtr(now.Add(s.Timeout))
		}
		if s.WaitFor != nil && s.WaitFor.Signal != "" {
			w.WaitSignal = &s.WaitFor.Signal
		}
	case Manual:
		w.Status = persistence.StatusManual
		w.NextActivation = nil
	case End:
		w.Status = persistence.StatusFinished
		w.NextActivation = nil
		w.Finished = timePtr(now)
	case ErrorKind:
		w.Status = persistence.StatusFailed
		w.NextActivation = nil
		w.Finished = timePtr(now)
	}
}

// Pause stops a workflow from being claimed until it is resumed. A step running when it is paused
// has its result discarded and runs again after resume.
func (e *Engine) Pause(ctx context.Context, p ChangeParams) (*persistence.Workflow, error) {
	return e.change(ctx, "pause", p, func(_ context.Context, _ *persistence.Store, w *persistence.Workflow, _ *Definition) (map[string]json.RawMessage, error) {
		switch w.Status {
		case persistence.StatusCreated, persistence.StatusInProgress, persistence.StatusWaiting, persistence.StatusExecuting:
		default:
			return nil, conflict("workflow %d is %s and cannot be paused", w.ID, w.Status)
		}
		if w.Status == persistence.StatusExecuting {
			w.NextActivation = timePtr(persistence.Now())
		}
		w.Status = persistence.StatusPaused
		w.ExecutorID = nil
		w.StepDeadline = nil
		return nil, nil
	})
}

// Resume makes a PAUSED workflow run again (at its scheduled time, or now).
func (e *Engine) Resume(ctx context.Context, p ChangeParams) (*persistence.Workflow, error) {
	return e.change(ctx, "resume", p, func(_ context.Context, _ *persistence.Store, w *persistence.Workflow, _ *Definition) (map[string]json.RawMessage, error) {
		if w.Status != persistence.StatusPaused {
			return nil, conflict("workflow %d is %s; only PAUSED workflows can be resumed", w.ID, w.Status)
		}
		now := persistence.Now()
		w.Status = persistence.StatusInProgress
		if w.NextActivation == nil {
			w.NextActivation = &now
		}
		return nil, nil
	})
}

// Cancel ends a workflow that has not ended, and every descendant that has not ended either: none
// is claimed again and a step running for any of them sees its context cancelled.
func (e *Engine) Cancel(ctx context.Context, p ChangeParams) (*persistence.Workflow, error) {
	var cascaded []int64
	w, err := e.change(ctx, "cancel", p, func(ctx context.Context, tx *persistence.Store, w *persistence.Workflow, _ *Definition) (map[string]json.RawMessage, error) {
		if w.Status.Terminal() {
			return nil, conflict("workflow %d is already %s", w.ID, w.Status)
		}
		cancelWorkflow(w)
		var err error
		cascaded, err = e.cancelDescendants(ctx, tx, w, p)
		return nil, err
	})
	for _, id := range cascaded {
		e.notifier.Notify(persistence.TopicCancel, fmtID(id))
	}
	return w, err
}

func cancelWorkflow(w *persistence.Workflow) {
	now := persistence.Now()
	w.Status = persistence.StatusCancelled
	w.NextActivation = nil
	w.ExecutorID = nil
	w.StepDeadline = nil
	w.WaitSignal = nil
	w.Finished = &now
}

// cancelDescendants cancels the active descendants of a workflow being cancelled, each with its own
// EXTERNAL_CHANGE action and change event, and returns their IDs.
func (e *Engine) cancelDescendants(ctx context.Context, tx *persistence.Store, root *persistence.Workflow, p ChangeParams) ([]int64, error) {
	actor := p.Actor
	if actor == "" {
		actor = "api"
	}
	text := fmt.Sprintf("cancel: ancestor %d was cancelled", root.ID)
	var all []int64
	parents := []int64{root.ID}
	for len(parents) > 0 {
		ids, err := tx.WorkflowActiveChildIDs(ctx, parents)
		if err != nil {
			return nil, err
		}
		parents = parents[:0]
		for _, id := range ids {
			child, err := tx.WorkflowGetForUpdate(ctx, id)
			if err != nil {
				return nil, err
			}
			if child.Status.Terminal() {
				continue
			}
			from := child.State
			cancelWorkflow(child)
			if err := tx.WorkflowSave(ctx, child); err != nil {
				return nil, err
			}
			a := &persistence.Action{WorkflowID: child.ID, Type: persistence.ActionExternalChange, FromState: &from, State: child.State,
				StateText: &text, RetryNo: child.Retries, Actor: &actor, At: child.Modified}
			if err := tx.ActionInsertMany(ctx, []*persistence.Action{a}); err != nil {
				return nil, err
			}
			if err := tx.ChangeEventInsertMany(ctx, []*persistence.ChangeEvent{{WorkflowID: child.ID, Type: string(persistence.ActionExternalChange),
				ActionID: &a.ID, Status: child.Status, State: child.State, At: child.Modified}}); err != nil {
				return nil, err
			}
			all = append(all, child.ID)
			parents = append(parents, child.ID)
		}
	}
	return all, nil
}

// UpdateParams is the input of Update: an operator's change of a workflow (nFlow's external change).
type UpdateParams struct {
	ChangeParams
	// State moves the workflow to this state (its status follows the state's kind).
	State *string
	// StateText sets the state text.
	StateText *string
	// NextActivation reschedules the workflow; ClearNextActivation unschedules it.
	NextActivation      *time.Time
	ClearNextActivation bool
	// Variables are merged into the workflow's variables; a null value removes a key.
	Variables json.RawMessage
}

// Update changes a workflow's state, state text, schedule or variables. It refuses a workflow whose
// step is running (pause it first).
func (e *Engine) Update(ctx context.Context, p UpdateParams) (*persistence.Workflow, error) {
	var vars map[string]json.RawMessage
	if len(p.Variables) > 0 {
		m, _, err := decodeObject("variables", p.Variables)
		if err != nil {
			return nil, err
		}
		vars = m
	}
	if p.State == nil && p.StateText == nil && p.NextActivation == nil && !p.ClearNextActivation && vars == nil {
		return nil, invalid("input", "nothing to update: give state, stateText, nextActivation or variables")
	}
	return e.change(ctx, "update", p.ChangeParams, func(_ context.Context, _ *persistence.Store, w *persistence.Workflow, def *Definition) (map[string]json.RawMessage, error) {
		if w.Status == persistence.StatusExecuting {
			return nil, conflict("workflow %d is executing a step; pause it before updating it", w.ID)
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
		} else if w.Status.Terminal() && (p.NextActivation != nil || p.ClearNextActivation) {
			return nil, conflict("workflow %d is %s; move it to a state to schedule it again", w.ID, w.Status)
		} else if p.NextActivation != nil {
			w.NextActivation = persistence.UTCPtr(p.NextActivation)
		} else if p.ClearNextActivation {
			w.NextActivation = nil
		}
		if p.StateText != nil {
			w.StateText = p.StateText
		}
		return vars, nil
	})
}

// WakeUp makes a scheduled or waiting workflow due now.
func (e *Engine) WakeUp(ctx context.Context, p ChangeParams) (*persistence.Workflow, error) {
	return e.change(ctx, "wakeUp", p, func(_ context.Context, _ *persistence.Store, w *persistence.Workflow, _ *Definition) (map[string]json.RawMessage, error) {
		if !claimable(w.Status) {
			return nil, conflict("workflow %d is %s and cannot be woken up", w.ID, w.Status)
		}
		if w.Status == persistence.StatusWaiting {
			w.Status = persistence.StatusInProgress
		}
		w.NextActivation = timePtr(persistence.Now())
		return nil, nil
	})
}

// SignalParams is the input of Signal.
type SignalParams struct {
	ID             int64
	Name           string
	Payload        json.RawMessage
	IdempotencyKey string
	Actor          string
}

// Signal delivers a message to a workflow. A workflow waiting for it wakes at once; one that is not
// waiting yet keeps it until a WAIT state asks for it. The same idempotency key delivers once.
func (e *Engine) Signal(ctx context.Context, p SignalParams) (*persistence.Workflow, error) {
	if p.Name == "" {
		return nil, invalid("name", "a signal needs a name")
	}
	if len(p.Payload) > 0 && !json.Valid(p.Payload) {
		return nil, invalid("payload", "payload must be JSON")
	}
	var out *persistence.Workflow
	var woke bool
	err := e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		if done, err := replay(ctx, tx, "signal", p.ID, p.IdempotencyKey); done != nil || err != nil {
			out = done
			return err
		}
		w, err := tx.WorkflowGet(ctx, p.ID)
		if errors.Is(err, persistence.ErrNotFound) {
			return notFound("id", "no workflow with id %d", p.ID)
		} else if err != nil {
			return err
		}
		if w.Status.Terminal() {
			return conflict("workflow %d is %s and takes no signals", w.ID, w.Status)
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
		evType := EventSignaled
		if woke {
			evType = EventWoken
		}
		if err := tx.ChangeEventInsertMany(ctx, []*persistence.ChangeEvent{{WorkflowID: w.ID, Type: evType, Status: out.Status, State: out.State}}); err != nil {
			return err
		}
		return remember(ctx, tx, "signal", p.ID, p.IdempotencyKey)
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
