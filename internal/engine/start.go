package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"

	"github.com/cairnflow/cairn/internal/batch"
	"github.com/cairnflow/cairn/internal/tracing"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// Start starts one workflow. See StartMany; its errors name the field at fault as it is ("type").
//
// Concurrent Starts share transactions (a group commit): a request is checked on its own, then
// written with the others that arrived meanwhile in one transaction and one commit. What each
// caller sees is what it would see alone: its own result, its own errors (a request reusing an
// idempotency key is refused alone, the others still commit), the same idempotency and
// external-ID rules, in the order the requests joined the batch. A caller whose context ends while
// its batch runs still has its start written, whole.
func (e *Engine) Start(ctx context.Context, p workflow.StartParams) (workflow.StartResult, error) {
	ctx, span := traceStart(ctx, 1, p.Type)
	defer span.End()
	items, err := e.prepareStarts(ctx, []workflow.StartParams{p}, false)
	if err != nil {
		return workflow.StartResult{}, err
	}
	return e.starts.Do(ctx, items[0])
}

// StartMany starts workflows in one transaction with bulk inserts. A request naming an external ID
// or idempotency key that is already used returns the existing workflow (Created false). Any invalid
// request fails the whole call and starts nothing; the error names the field at fault with its
// index, as the startWorkflows mutation's argument: "workflows[1].type".
func (e *Engine) StartMany(ctx context.Context, ps []workflow.StartParams) ([]workflow.StartResult, error) {
	return e.startMany(ctx, ps, true)
}

// startMany is StartMany; indexed says whether error fields carry the index of the request.
func (e *Engine) startMany(ctx context.Context, ps []workflow.StartParams, indexed bool) ([]workflow.StartResult, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	ctx, span := traceStart(ctx, len(ps), ps[0].Type)
	defer span.End()
	items, err := e.prepareStarts(ctx, ps, indexed)
	if err != nil {
		return nil, err
	}
	results, err := e.commitStarts(ctx, items)
	var refused *startRefused
	if errors.As(err, &refused) {
		return nil, refused.err // one request refused fails the whole call
	}
	return results, err
}

// startItem is one start request, checked and made into the row it inserts.
type startItem struct {
	w    *persistence.Workflow
	p    workflow.StartParams
	hash string // of the request, kept with its idempotency key
	// keyField names the request's idempotency key in errors.
	keyField string
	// attrs are the workflow's search attributes (nil: none).
	attrs map[string]*persistence.AttributeValue
	// traceparent is the trace the start ran in ("": none), stored with the workflow.
	traceparent string
}

// startRefused is a request of a batch refused inside its transaction (its idempotency key reused
// with another request): index is its place in the batch.
type startRefused struct {
	index int
	err   error
}

func (r *startRefused) Error() string { return r.err.Error() }
func (r *startRefused) Unwrap() error { return r.err }

// maxStartBatch bounds the starts of concurrent callers one transaction writes.
const maxStartBatch = 500

// newStartGroup makes the group commit of Start: one transaction at a time per two of this node's
// cores (up to four) where writers work in parallel, one on SQLite. More batches in flight than
// that only split the same starts into more, smaller transactions: on two cores, 64 clients
// starting over HTTP on PostgreSQL ran 1.17 times faster with one than with four.
func (e *Engine) newStartGroup() *batch.Group[startItem, workflow.StartResult] {
	leaders := min(4, max(1, runtime.GOMAXPROCS(0)/2))
	if e.store.Capabilities().SingleWriter {
		leaders = 1
	}
	return &batch.Group[startItem, workflow.StartResult]{Leaders: leaders, MaxBatch: maxStartBatch, Run: e.startBatch}
}

// startBatch writes the starts of concurrent callers in one transaction. A request refused inside
// it fails alone: the batch is written again without it.
func (e *Engine) startBatch(ctx context.Context, items []startItem) ([]workflow.StartResult, []error, error) {
	results, errs := make([]workflow.StartResult, len(items)), make([]error, len(items))
	live := make([]int, len(items))
	for i := range live {
		live[i] = i
	}
	for len(live) > 0 {
		batch := make([]startItem, len(live))
		for k, i := range live {
			batch[k] = items[i]
		}
		rs, err := e.commitStarts(ctx, batch)
		var refused *startRefused
		if errors.As(err, &refused) {
			errs[live[refused.index]] = refused.err
			live = append(live[:refused.index:refused.index], live[refused.index+1:]...)
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		for k, i := range live {
			results[i] = rs[k]
		}
		break
	}
	return results, errs, nil
}

// prepareStarts checks each request and makes the row it would insert; the first invalid one fails
// the call, naming its field (with its index when indexed).
func (e *Engine) prepareStarts(ctx context.Context, ps []workflow.StartParams, indexed bool) ([]startItem, error) {
	defs := map[string]*persistence.Definition{}
	items := make([]startItem, len(ps))
	now := persistence.Now()
	traceparent := tracing.Traceparent(ctx)
	for i, p := range ps {
		field := func(f string) string {
			if !indexed {
				return f
			}
			return fmt.Sprintf("workflows[%d].%s", i, f)
		}
		if err := p.Validate(field); err != nil {
			return nil, err
		}
		if p.Type == "" {
			return nil, invalid(field("type"), "type is required")
		}
		def, ok := defs[p.Type]
		if !ok {
			d, err := e.newestDefinition(ctx, p.Type)
			if errors.Is(err, persistence.ErrNotFound) {
				return nil, invalid(field("type"), "no workflow definition of type %q", p.Type)
			} else if err != nil {
				return nil, err
			}
			def, defs[p.Type] = d, d
		}
		if err := startable(def, field("type")); err != nil {
			return nil, err
		}
		spec, err := e.specOfRow(def)
		if err != nil {
			return nil, err
		}
		_, input, err := decodeObject(field("input"), p.Input)
		if err != nil {
			return nil, err
		}
		varMap, vars, err := decodeObject(field("variables"), p.Variables)
		if err != nil {
			return nil, err
		}
		if err := firstError(checkValue(e.limits, field("input"), input), checkVariablesSize(e.limits, field("variables"), varMap, vars)); err != nil {
			return nil, err
		}
		attrs, err := e.resolveAttributes(ctx, field("attributes"), p.Attributes, false)
		if err != nil {
			return nil, err
		}
		due := now
		if p.StartAt != nil {
			due = persistence.UTC(*p.StartAt)
		}
		w := &persistence.Workflow{
			Type: p.Type, DefinitionVersion: def.Version, ExternalID: strPtr(p.ExternalID), BusinessKey: strPtr(p.BusinessKey),
			LaunchToken: strPtr(p.LaunchToken), Status: persistence.StatusCreated, State: spec.StartState().Name,
			NextActivation: &due, Priority: p.Priority, ExecutorGroup: def.ExecutorGroup, Input: input, Variables: vars,
			Created: now, Modified: now,
		}
		// A key expression that fails for this input puts this workflow alone in MANUAL.
		key, keyErr, err := e.concurrencyKey(ctx, p, input)
		if err != nil {
			return nil, err
		}
		if keyErr != nil {
			text := keyErr.Error()
			w.Status, w.NextActivation, w.StateText, w.LastError = persistence.StatusManual, nil, &text, &text
		}
		w.ConcurrencyKey = key
		if d := p.Debounce; d != nil {
			w.DebounceKey = &d.Key
			if p.StartAt == nil && w.NextActivation != nil {
				later := now.Add(d.Period)
				w.NextActivation = &later
			}
		}
		items[i] = startItem{p: p, hash: hashStart(p), keyField: field("idempotencyKey"), attrs: attrs, traceparent: traceparent, w: w}
	}
	return items, nil
}

// commitStarts writes checked start requests in one transaction with bulk inserts, and wakes the
// pools of the workflows due now. A request whose idempotency key another request used with other
// content fails the transaction with a *startRefused naming it.
func (e *Engine) commitStarts(ctx context.Context, items []startItem) ([]workflow.StartResult, error) {
	now := persistence.Now()
	results := make([]workflow.StartResult, len(items))
	wake := map[string]bool{}
	var due []*persistence.Workflow // created due now
	for attempt := 0; ; attempt++ {
		clear(wake)
		due = due[:0]
		err := e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
			var fresh []*persistence.Workflow
			var freshIdx []int
			seenExt := map[string]int{}
			seenKey := map[string]int{}   // idempotency key -> first request in this call with it
			keyDup := map[int]int{}       // a later request with a key -> the first one
			debounced := map[string]int{} // type and debounce key -> its row in fresh
			for i, it := range items {
				results[i] = workflow.StartResult{}
				if key := it.p.IdempotencyKey; key != "" {
					if j, dup := seenKey[key]; dup {
						if items[j].hash != it.hash {
							return &startRefused{index: i, err: keyReused(it.keyField)}
						}
						keyDup[i] = j // replays the first: filled in after the insert
						continue
					}
					seenKey[key] = i
					k, err := tx.IdempotencyKeyGet(ctx, "start", key)
					if err == nil {
						if k.RequestHash != "" && k.RequestHash != it.hash {
							return &startRefused{index: i, err: keyReused(it.keyField)}
						}
						w, err := tx.WorkflowGet(ctx, k.WorkflowID)
						if err != nil {
							return err
						}
						results[i] = workflow.StartResult{Workflow: w}
						continue
					} else if !errors.Is(err, persistence.ErrNotFound) {
						return err
					}
				}
				if d := it.p.Debounce; d != nil {
					folded, err := e.debounce(ctx, tx, it, debounced, fresh, now)
					if err != nil {
						return err
					}
					if folded != nil {
						results[i] = workflow.StartResult{Workflow: folded, Debounced: true}
						continue
					}
				}
				if it.p.ExternalID != "" {
					key := it.p.Type + "\x00" + it.p.ExternalID
					if _, dup := seenExt[key]; dup {
						continue // the same external ID earlier in this call: filled in after the insert
					}
					w, err := tx.WorkflowGetByExternalID(ctx, it.p.Type, it.p.ExternalID)
					if err == nil {
						results[i] = workflow.StartResult{Workflow: w}
						continue
					} else if !errors.Is(err, persistence.ErrNotFound) {
						return err
					}
					seenExt[key] = i
				}
				w := *it.w
				if it.p.Debounce != nil {
					debounced[it.p.Type+"\x00"+it.p.Debounce.Key] = len(fresh)
				}
				fresh = append(fresh, &w)
				freshIdx = append(freshIdx, i)
			}
			if err := tx.WorkflowInsertMany(ctx, fresh); err != nil {
				return err
			}
			var attrs []*persistence.WorkflowAttribute
			for k, w := range fresh {
				if a := items[freshIdx[k]].attrs; len(a) > 0 {
					attrs = append(attrs, attributeRows(w.ID, a)...)
				}
			}
			if err := tx.WorkflowAttributeInsertMany(ctx, attrs); err != nil {
				return err
			}
			var traces []*persistence.WorkflowTrace
			for k, w := range fresh {
				if tp := items[freshIdx[k]].traceparent; tp != "" {
					traces = append(traces, &persistence.WorkflowTrace{WorkflowID: w.ID, Traceparent: tp})
				}
			}
			if err := tx.WorkflowTraceInsertMany(ctx, traces); err != nil {
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
				results[freshIdx[k]] = workflow.StartResult{Workflow: w, Created: true}
				events = append(events, &persistence.ChangeEvent{WorkflowID: w.ID, Type: workflow.EventCreated, Status: w.Status, State: w.State, At: now})
				if w.NextActivation != nil && !w.NextActivation.After(now) {
					due = append(due, w)
				}
			}
			// Duplicates within the call share the first one's workflow.
			for i, it := range items {
				if _, byKey := keyDup[i]; !byKey && results[i].Workflow == nil && it.p.ExternalID != "" {
					results[i] = workflow.StartResult{Workflow: results[seenExt[it.p.Type+"\x00"+it.p.ExternalID]].Workflow}
				}
			}
			for i, j := range keyDup {
				results[i] = workflow.StartResult{Workflow: results[j].Workflow}
			}
			for i, it := range items {
				if it.p.IdempotencyKey != "" && results[i].Created {
					if err := tx.IdempotencyKeyInsert(ctx, &persistence.IdempotencyKey{Operation: "start", Key: it.p.IdempotencyKey,
						WorkflowID: results[i].Workflow.ID, RequestHash: it.hash}); err != nil {
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
	e.afterCommit(e.wakeForStarts(due, wake), true)
	return results, nil
}

// startable refuses a stored definition that starts no new workflow (OFFLINE), whatever the path:
// a start, a step's child, a schedule's fire or a backfill. field names the input at fault.
func startable(def *persistence.Definition, field string) error {
	if def.ReleaseState != persistence.ReleaseOnline {
		return conflictOn(field, "workflow definition %q is %s and starts no new workflow", def.Type, def.ReleaseState)
	}
	return nil
}
