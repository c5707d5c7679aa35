package engine

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// changeOp is an operation that changes workflows an operator names: its name, the rest of its
// request (fingerprinted with the reason for idempotency; nil: none), its change of one workflow,
// and what follows in the family of the workflows it changed (nil: nothing).
type changeOp struct {
	name    string
	request any
	fn      changeFunc
	// cascade runs in the same transaction once the changed workflows are saved, and returns
	// the other workflows it changed (their running steps are interrupted after the commit).
	cascade func(ctx context.Context, tx *persistence.Store, changed []*persistence.Workflow, actor string) ([]*persistence.Workflow, error)
}

// changeResult is what a change of workflows did in its transaction.
type changeResult struct {
	// out holds each workflow changed (or replayed: changed before with the same idempotency key)
	// as it now is, by ID.
	out map[int64]*persistence.Workflow
	// refused holds, by ID, why a workflow was left as it was (a *workflow.Error).
	refused map[int64]error
	// interrupt lists the workflows whose running steps are to be interrupted once it commits.
	interrupt []*persistence.Workflow
}

type clockKey struct{}

// withClock makes clock(ctx) return now: every workflow of one change is changed at one instant,
// so that those changed alike are saved by one statement.
func withClock(ctx context.Context, now time.Time) context.Context {
	return context.WithValue(ctx, clockKey{}, now)
}

// clock is the instant of the change running in ctx (persistence.Now() outside one).
func clock(ctx context.Context) time.Time {
	if t, ok := ctx.Value(clockKey{}).(time.Time); ok {
		return t
	}
	return persistence.Now()
}

// changeIn is changeManyIn of one workflow: its error is the workflow's own refusal too.
func (e *Engine) changeIn(ctx context.Context, tx *persistence.Store, op changeOp, p workflow.ChangeParams, wake map[string]bool) (*persistence.Workflow, []*persistence.Workflow, error) {
	res, err := e.changeManyIn(ctx, tx, op, []workflow.ChangeParams{p}, wake)
	if err != nil {
		return nil, nil, err
	}
	if err := res.refused[p.ID]; err != nil {
		return nil, nil, err
	}
	return res.out[p.ID], res.interrupt, nil
}

// changeManyIn changes workflows inside transaction tx with set-based statements: it locks them
// all with one SELECT, lets op.fn change each, saves them with one UPDATE per distinct outcome
// (fenced by version), and writes their EXTERNAL_CHANGE actions (with the actor and reason of
// each one's params) and change events with one INSERT each. A workflow that is missing, or that
// op.fn or its variables' limits refuse (a *workflow.Error other than INTERNAL), is left as it
// was and listed in refused; any other error fails the whole change. It marks in wake the
// executor groups to wake once tx commits.
func (e *Engine) changeManyIn(ctx context.Context, tx *persistence.Store, op changeOp, ps []workflow.ChangeParams, wake map[string]bool) (*changeResult, error) {
	res := &changeResult{out: map[int64]*persistence.Workflow{}, refused: map[int64]error{}}
	ids := make([]int64, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
	}
	ws, err := tx.WorkflowGetManyForUpdate(ctx, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]*persistence.Workflow, len(ws))
	for _, w := range ws {
		byID[w.ID] = w
	}
	ctx = withClock(ctx, persistence.Now())
	var cs []*changing
	for _, p := range ps {
		w := byID[p.ID]
		if w == nil {
			res.refused[p.ID] = notFound("id", "no workflow %v", workflowRef(p.ID))
			continue
		}
		// Only now that the row is locked: a concurrent request with the same key has committed
		// (and is replayed) or waits for this one.
		done, err := replay(ctx, tx, op.name, p.ID, p.IdempotencyKey, hashChange(op.name, p, op.request))
		if err := res.refuse(p.ID, err); err != nil {
			return nil, err
		} else if res.refused[p.ID] != nil {
			continue
		} else if done != nil {
			res.out[p.ID] = done
			continue
		}
		def, err := e.specOf(ctx, tx, w)
		if err != nil {
			return nil, err
		}
		c := &changing{p: p, read: *w, w: w, fromStatus: w.Status}
		held, deadline := w.ExecutorID, w.StepDeadline
		vars, err := op.fn(ctx, tx, w, def)
		if err == nil && held == nil {
			err = e.waitForSlot(ctx, tx, c.fromStatus, w)
		}
		if err == nil {
			// An operation never takes a claim away: a step still running keeps its workflow until
			// it ends and lets go (its result fenced off by the version), so that no second attempt
			// can be claimed meanwhile. Only that attempt's completion, or a recovery, clears it.
			w.ExecutorID, w.StepDeadline = held, deadline
			err = e.mergeChangedVariables(op.name, w, vars)
		}
		if err := res.refuse(p.ID, err); err != nil {
			return nil, err
		} else if res.refused[p.ID] != nil {
			*w = c.read // as it was: nothing of a refused change is saved
			continue
		}
		c.vars = vars
		cs = append(cs, c)
	}
	if len(cs) == 0 {
		return res, nil
	}
	saves := make([]persistence.WorkflowChange, len(cs))
	for i, c := range cs {
		saves[i] = persistence.WorkflowChange{Read: c.read, W: c.w}
	}
	if err := tx.WorkflowSaveMany(ctx, saves); err != nil {
		return nil, err
	}
	if err := e.wakeEnteredWaits(ctx, tx, cs, wake); err != nil {
		return nil, err
	}
	actions := make([]*persistence.Action, len(cs))
	for i, c := range cs {
		actor := actorOf(c.p)
		text := op.name
		if c.p.Reason != "" {
			text = op.name + ": " + c.p.Reason
		}
		from := c.read.State
		actions[i] = &persistence.Action{WorkflowID: c.w.ID, Type: persistence.ActionExternalChange, FromState: &from, State: c.w.State,
			StateText: &text, RetryNo: c.w.Retries, Actor: &actor, At: c.w.Modified}
	}
	if err := tx.ActionInsertMany(ctx, actions); err != nil {
		return nil, err
	}
	var vars []*persistence.ActionVariable
	var events []*persistence.ChangeEvent
	var parents []int64
	var changed []*persistence.Workflow
	for i, c := range cs {
		w, a := c.w, actions[i]
		vars = append(vars, actionVariables(w.ID, a.ID, c.vars)...)
		events = append(events, &persistence.ChangeEvent{WorkflowID: w.ID, Type: string(persistence.ActionExternalChange),
			ActionID: &a.ID, Status: w.Status, State: w.State, At: w.Modified})
		if w.Status.Terminal() && !c.fromStatus.Terminal() && w.ParentID != nil {
			parents = append(parents, *w.ParentID)
			wake[w.ExecutorGroup] = true
		}
		if w.NextActivation != nil && !w.NextActivation.After(w.Modified) && claimable(w.Status) {
			wake[w.ExecutorGroup] = true
		}
		if c.fromStatus == persistence.StatusExecuting && w.Status != persistence.StatusExecuting {
			res.interrupt = append(res.interrupt, w)
		}
		res.out[w.ID] = w
		changed = append(changed, w)
	}
	if err := tx.ActionVariableInsertMany(ctx, vars); err != nil {
		return nil, err
	}
	if err := tx.ChangeEventInsertMany(ctx, events); err != nil {
		return nil, err
	}
	if len(parents) > 0 {
		if _, err := tx.WorkflowWake(ctx, persistence.WorkflowWakeParams{IDs: parents, Now: cs[0].w.Modified}); err != nil {
			return nil, err
		}
	}
	if op.cascade != nil {
		more, err := op.cascade(ctx, tx, changed, actorOf(cs[0].p))
		if err != nil {
			return nil, err
		}
		res.interrupt = append(res.interrupt, more...)
	}
	for _, c := range cs {
		if err := remember(ctx, tx, op.name, c.p.ID, c.p.IdempotencyKey, hashChange(op.name, c.p, op.request)); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// changing is one workflow a change of workflows changes.
type changing struct {
	p          workflow.ChangeParams
	read       persistence.Workflow // as it was read
	w          *persistence.Workflow
	vars       map[string]json.RawMessage
	fromStatus persistence.Status
}

// refuse sorts an operation's error on one workflow: nil, the workflow's own refusal (a
// *workflow.Error other than INTERNAL, recorded in refused), or an error that fails the whole
// change (returned).
func (res *changeResult) refuse(id int64, err error) error {
	var we *workflow.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &we) && we.Code != workflow.CodeInternal:
		res.refused[id] = err
		return nil
	default:
		return err
	}
}

// mergeChangedVariables merges the variables an operation set into a workflow's, within the
// limits of their size.
func (e *Engine) mergeChangedVariables(op string, w *persistence.Workflow, vars map[string]json.RawMessage) error {
	if len(vars) == 0 {
		return nil
	}
	merged, err := mergeVariables(w.Variables, vars)
	if err != nil {
		return err
	}
	field := "variables"
	if op == "submitForm" {
		field = "data" // a form's variables are its data
	}
	if err := checkVariablesSize(e.limits, field, vars, merged); err != nil {
		return err
	}
	w.Variables = merged
	return nil
}

// wakeEnteredWaits wakes the changed workflows that moved into a WAIT state whose condition
// already holds (what they wait for may have come already), and reads them again as they now are.
func (e *Engine) wakeEnteredWaits(ctx context.Context, tx *persistence.Store, cs []*changing, wake map[string]bool) error {
	var waiting []waiter
	for _, c := range cs {
		if c.w.Status != persistence.StatusWaiting || c.fromStatus == persistence.StatusWaiting {
			continue
		}
		def, err := e.specOf(ctx, tx, c.w)
		if err != nil {
			return err
		}
		if s, ok := def.State(c.w.State); ok && s.WaitFor != nil {
			waiting = append(waiting, waiter{id: c.w.ID, wait: s.WaitFor})
		}
	}
	if len(waiting) == 0 {
		return nil
	}
	woken, err := e.wakeSatisfiedWaits(ctx, tx, waiting, cs[0].w.Modified)
	if err != nil || len(woken) == 0 {
		return err
	}
	now, err := tx.WorkflowGetMany(ctx, woken)
	if err != nil {
		return err
	}
	byID := make(map[int64]*persistence.Workflow, len(now))
	for _, w := range now {
		byID[w.ID] = w
	}
	for _, c := range cs {
		if w := byID[c.w.ID]; w != nil {
			wake[w.ExecutorGroup] = true
			c.w = w
		}
	}
	return nil
}

// actorOf is who asks for a change ("api" when no one is named).
func actorOf(p workflow.ChangeParams) string {
	if p.Actor == "" {
		return "api"
	}
	return p.Actor
}
