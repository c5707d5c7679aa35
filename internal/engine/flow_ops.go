// Flow control's operations: set and clear a type's run-time flow control, list what is in force,
// and say why a due workflow does not run.

package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// SetFlowControl sets a type's run-time flow control (it wins over the definition's), with an
// audit log entry by actor in the same transaction. A limit below 1, an unknown type, a bad
// period or a key expression that does not compile is an INVALID_INPUT naming the field, and
// changes nothing.
func (e *Engine) SetFlowControl(ctx context.Context, typ string, fc workflow.FlowControl, actor string) (*FlowControlled, error) {
	if err := e.knownType(ctx, typ); err != nil {
		return nil, err
	}
	if fc.Concurrency == nil && fc.RateLimit == nil {
		return nil, invalid("concurrency", "set a concurrency limit, a rate limit or both (clearFlowControl removes them)")
	}
	if err := fc.Validate(""); err != nil {
		return nil, err
	}
	fc = fc.WithDefaults()
	b, err := json.Marshal(fc)
	if err != nil {
		return nil, err
	}
	err = e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		if err := tx.FlowControlSet(ctx, &persistence.FlowControlRow{Type: typ, Settings: b, Updated: persistence.Now()}); err != nil {
			return err
		}
		return audit(ctx, tx, actor, "setFlowControl", typ, "", fc)
	})
	if err != nil {
		return nil, err
	}
	e.ForgetFlowControls()
	e.notifier.Notify(persistence.TopicWake, "") // waiting workflows may run now
	return e.flowControlOf(ctx, typ)
}

// ClearFlowControl removes a type's run-time flow control (the definition's applies again), with
// an audit log entry by actor in the same transaction when there was one.
func (e *Engine) ClearFlowControl(ctx context.Context, typ, actor string) (*FlowControlled, error) {
	if err := e.knownType(ctx, typ); err != nil {
		return nil, err
	}
	err := e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		if gone, err := tx.FlowControlDelete(ctx, typ); err != nil || !gone {
			return err
		}
		return audit(ctx, tx, actor, "clearFlowControl", typ, "", nil)
	})
	if err != nil {
		return nil, err
	}
	e.ForgetFlowControls()
	e.notifier.Notify(persistence.TopicWake, "")
	return e.flowControlOf(ctx, typ)
}

func (e *Engine) flowControlOf(ctx context.Context, typ string) (*FlowControlled, error) {
	all, err := e.FlowControls(ctx)
	if err != nil {
		return nil, err
	}
	return all[typ], nil
}

func (e *Engine) knownType(ctx context.Context, typ string) error {
	if err := workflow.CheckString("type", typ, workflow.MaxKeyLength); err != nil {
		return err
	}
	if _, err := e.store.DefinitionGet(ctx, persistence.DefinitionGetParams{Type: typ}); errors.Is(err, persistence.ErrNotFound) {
		return invalid("type", "no workflow definition of type %q", typ)
	} else if err != nil {
		return err
	}
	return nil
}

// FlowControlList returns the flow controls in force, by type.
func (e *Engine) FlowControlList(ctx context.Context) ([]*FlowControlled, error) {
	all, err := e.FlowControls(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*FlowControlled, 0, len(all))
	for _, c := range all {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out, nil
}

// FlowKeyCounts counts a flow-controlled type's holders and waiters per concurrency key.
func (e *Engine) FlowKeyCounts(ctx context.Context, c *FlowControlled) ([]*persistence.FlowKeyCount, error) {
	step := c.Flow.Concurrency != nil && c.Flow.Concurrency.Scope == workflow.ScopeStep
	return e.store.FlowKeyCounts(ctx, c.Type, step, persistence.Now())
}

// FlowBlock is what holds one flow-controlled type's due workflows back, read once for many.
type FlowBlock struct {
	c       *FlowControlled
	running map[string]int
	rates   map[string]time.Time
	now     time.Time
}

// FlowBlockOf reads what holds a type's workflows back (nil: the type has no flow control).
func (e *Engine) FlowBlockOf(ctx context.Context, typ string) (*FlowBlock, error) {
	c, err := e.flowControlOf(ctx, typ)
	if err != nil || c == nil {
		return nil, err
	}
	b := &FlowBlock{c: c, running: map[string]int{}, now: persistence.Now()}
	if c.Flow.Concurrency != nil {
		counts, err := e.FlowKeyCounts(ctx, c)
		if err != nil {
			return nil, err
		}
		for _, k := range counts {
			key := ""
			if k.Key != nil {
				key = *k.Key
			}
			b.running[key] = k.Running
		}
	}
	if r := c.Flow.RateLimit; r != nil {
		if b.rates, err = e.store.FlowRateNext(ctx, typ, r.Limit, r.Period, b.now); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// NeedsInput says whether Reason reads the workflow's input (a rate key expression).
func (b *FlowBlock) NeedsInput() bool {
	return b.c.Flow.RateLimit != nil && b.c.rateKey != nil
}

// Reason says why a workflow of the type does not run ("" when it is not due or nothing holds it
// back).
func (b *FlowBlock) Reason(w *persistence.Workflow) string {
	due := w.ExecutorID == nil && w.NextActivation != nil && !w.NextActivation.After(b.now) &&
		(w.Status == persistence.StatusCreated || w.Status == persistence.StatusInProgress || w.Status == persistence.StatusWaiting)
	if !due {
		return ""
	}
	if cc := b.c.Flow.Concurrency; cc != nil && (cc.Scope == workflow.ScopeStep || w.Status == persistence.StatusCreated) {
		key := ""
		if w.ConcurrencyKey != nil {
			key = *w.ConcurrencyKey
		}
		if n := b.running[key]; n >= cc.Limit {
			name := "concurrency key " + key
			if key == "" {
				name = "concurrency of workflows without a key"
			}
			return fmt.Sprintf("%s: %d of %d running", name, n, cc.Limit)
		}
	}
	if r := b.c.Flow.RateLimit; r != nil {
		key := ""
		if s := b.c.Spec(); s.RateKey != nil {
			key = s.RateKey(w.Input)
		}
		if at, ok := b.rates[key]; ok {
			name := "rate limit " + key
			if key == "" {
				name = "rate limit of " + b.c.Type
			}
			return fmt.Sprintf("%s: next slot in %d ms", name, at.Sub(b.now).Milliseconds())
		}
	}
	return ""
}

// debounce folds a start with a debounce key into the workflow of its type and key that has not
// run yet: one inserted earlier in this transaction (fresh, by debounced), else a stored one. It
// returns nil when there is none.
func (e *Engine) debounce(ctx context.Context, tx *persistence.Store, it startItem, debounced map[string]int,
	fresh []*persistence.Workflow, now time.Time) (*persistence.Workflow, error) {
	d := it.p.Debounce
	due := now.Add(d.Period)
	if it.p.StartAt != nil {
		due = persistence.UTC(*it.p.StartAt)
	}
	if k, ok := debounced[it.p.Type+"\x00"+d.Key]; ok {
		w := fresh[k]
		w.Input, w.NextActivation = it.w.Input, &due
		return w, nil
	}
	return tx.WorkflowDebounce(ctx, it.p.Type, d.Key, it.w.Input, due, now)
}
