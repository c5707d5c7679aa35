// Flow control: the limits in force per type (set at run time, or the definition's), read again
// at most every flowTTL so that a change made on another node applies here within about a second,
// and what the pool and starts ask of them.

package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// flowTTL is how long the flow controls read are used before they are read again.
const flowTTL = time.Second

// Where a type's flow control comes from.
const (
	FlowSourceRuntime    = "RUNTIME"
	FlowSourceDefinition = "DEFINITION"
)

// FlowControlled is a type's flow control in force, with its compiled key expressions.
type FlowControlled struct {
	Type   string
	Source string
	Flow   workflow.FlowControl
	// Group is the type's executor group.
	Group string
	// Defined is the definition's own flow control when a run-time one overrides it.
	Defined    *workflow.FlowControl
	Updated    time.Time
	concKey    *workflow.KeyExpr
	rateKey    *workflow.KeyExpr
	compileErr error
}

type flowState struct {
	mu   sync.Mutex
	read time.Time
	// types are the flow-controlled types.
	types map[string]*FlowControlled
}

// FlowControls returns the flow controls in force, by type, reading them again when older than
// flowTTL (a read that fails keeps the last ones; with none, it is an error).
func (e *Engine) FlowControls(ctx context.Context) (map[string]*FlowControlled, error) {
	return e.flowControlsFrom(ctx, e.store)
}

// flowControlsFrom is FlowControls reading through s: inside a transaction, the transaction
// itself (on SQLite, with its one connection, a read beside it would wait for it to end).
func (e *Engine) flowControlsFrom(ctx context.Context, s *persistence.Store) (map[string]*FlowControlled, error) {
	e.flow.mu.Lock()
	defer e.flow.mu.Unlock()
	if e.flow.types != nil && time.Since(e.flow.read) < flowTTL {
		return e.flow.types, nil
	}
	types, err := e.readFlowControls(ctx, s)
	if err != nil {
		if e.flow.types == nil {
			return nil, fmt.Errorf("error reading flow controls: %w", err)
		}
		if ctx.Err() == nil {
			e.log.Warn("error reading flow controls", "error", err)
		}
		return e.flow.types, nil
	}
	e.flow.types, e.flow.read = types, time.Now()
	return types, nil
}

// ForgetFlowControls makes the next FlowControls read them again (after a change on this node).
func (e *Engine) ForgetFlowControls() {
	e.flow.mu.Lock()
	e.flow.read = time.Time{}
	e.flow.mu.Unlock()
}

func (e *Engine) readFlowControls(ctx context.Context, s *persistence.Store) (map[string]*FlowControlled, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	defs, err := s.DefinitionList(ctx, persistence.DefinitionListParams{})
	if err != nil {
		return nil, err
	}
	rows, err := s.FlowControlList(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]*FlowControlled{}
	groups := map[string]string{}
	for _, row := range defs {
		groups[row.Type] = row.ExecutorGroup
		d, err := e.specOfRow(row)
		if err != nil || d.FlowControl == nil {
			continue
		}
		out[row.Type] = newFlowControlled(row.Type, FlowSourceDefinition, *d.FlowControl, row.ExecutorGroup)
	}
	for _, row := range rows {
		var fc workflow.FlowControl
		if err := json.Unmarshal(row.Settings, &fc); err != nil {
			e.log.Warn("error reading a flow control", "type", row.Type, "error", err)
			continue
		}
		c := newFlowControlled(row.Type, FlowSourceRuntime, fc, groups[row.Type])
		c.Updated = row.Updated
		if def := out[row.Type]; def != nil {
			c.Defined = &def.Flow
		}
		out[row.Type] = c
	}
	return out, nil
}

func newFlowControlled(typ, source string, fc workflow.FlowControl, group string) *FlowControlled {
	c := &FlowControlled{Type: typ, Source: source, Flow: fc.WithDefaults(), Group: group}
	if cc := c.Flow.Concurrency; cc != nil {
		c.concKey, c.compileErr = workflow.CompileKey("concurrency.key", cc.Key)
	}
	if r := c.Flow.RateLimit; r != nil && c.compileErr == nil {
		c.rateKey, c.compileErr = workflow.CompileKey("rateLimit.key", r.Key)
	}
	return c
}

// Spec is what the pool's flow claim holds the type to.
func (c *FlowControlled) Spec() persistence.FlowSpec {
	s := persistence.FlowSpec{Type: c.Type}
	if cc := c.Flow.Concurrency; cc != nil {
		s.Concurrency = cc.Limit
		s.StepScope = cc.Scope == workflow.ScopeStep
		s.CancelNewest = cc.Strategy == workflow.StrategyCancelNewest
		s.CancelInProgress = cc.Strategy == workflow.StrategyCancelInProgress
	}
	if r := c.Flow.RateLimit; r != nil {
		s.RateLimit, s.RatePeriod = r.Limit, r.Period
		if k := c.rateKey; k != nil {
			s.RateKey = func(input json.RawMessage) string {
				key, err := k.Eval(input)
				if err != nil {
					// Its start was checked: only a workflow started before the limit was set
					// falls under the type's own rate (as it has no concurrency key).
					return ""
				}
				return key
			}
		}
	}
	return s
}

// waitForSlot makes a workflow that an operation brings back to run (resumed from PAUSED, retried
// from FAILED or MANUAL) wait CREATED for a slot of its key when its type has a WORKFLOW-scope
// concurrency limit: it gave its slot up when it stopped, and runs again only once a claim or a
// completion hands it one, so that the key never runs more than its limit. Its `started` stays
// set: the strategies CANCEL_NEWEST and CANCEL_IN_PROGRESS and debounce treat it as a workflow that
// ran before, not as a new start.
func (e *Engine) waitForSlot(ctx context.Context, tx *persistence.Store, from persistence.Status, w *persistence.Workflow) error {
	if from.HoldsSlot() || from == persistence.StatusCreated || w.Status != persistence.StatusInProgress {
		return nil
	}
	all, err := e.flowControlsFrom(ctx, tx)
	if err != nil {
		return err
	}
	if c := all[w.Type]; c != nil && c.compileErr == nil && c.Flow.Concurrency != nil && c.Flow.Concurrency.Scope != workflow.ScopeStep {
		w.Status = persistence.StatusCreated
	}
	return nil
}

// FlowTypes returns the flow-controlled types of an executor group among types, sorted.
func (e *Engine) FlowTypes(ctx context.Context, types []string) ([]*FlowControlled, error) {
	all, err := e.FlowControls(ctx)
	if err != nil {
		return nil, err
	}
	var out []*FlowControlled
	for _, t := range types {
		if c := all[t]; c != nil && c.compileErr == nil {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out, nil
}

// concurrencyKey is the key a start gives its workflow: the explicit one, or the one the type's
// key expression computes from the input. keyErr says why the concurrency key expression, or the
// rate limit's key expression, gave none for this input; err is a failure to read the flow
// controls.
func (e *Engine) concurrencyKey(ctx context.Context, p workflow.StartParams, input json.RawMessage) (_ *string, keyErr, err error) {
	if p.ConcurrencyKey != "" {
		return &p.ConcurrencyKey, nil, nil
	}
	all, err := e.FlowControls(ctx)
	if err != nil {
		return nil, nil, err
	}
	c := all[p.Type]
	if c == nil {
		return nil, nil, nil
	}
	// The rate key is computed at each claim; one that cannot be computed for this input puts the
	// workflow in MANUAL at its start, as a concurrency key does, never under another key's rate.
	if c.rateKey != nil {
		if _, keyErr := c.rateKey.Eval(input); keyErr != nil {
			return nil, fmt.Errorf("no rate limit key: %w", keyErr), nil
		}
	}
	if c.concKey == nil {
		return nil, nil, nil
	}
	key, keyErr := c.concKey.Eval(input)
	if keyErr != nil {
		return nil, fmt.Errorf("no concurrency key: %w", keyErr), nil
	}
	if key == "" {
		return nil, nil, nil
	}
	return &key, nil, nil
}

// CancelForFlow cancels the workflows a flow claim's strategy gave up, with its reason.
func (e *Engine) CancelForFlow(ctx context.Context, cs []persistence.FlowCancel) {
	for _, c := range cs {
		_, err := e.Cancel(ctx, workflow.ChangeParams{ID: c.ID, Reason: c.Reason, Actor: "flow-control"})
		if err != nil && ctx.Err() == nil && workflow.CodeOf(err) != workflow.CodeConflict {
			e.log.Warn("error cancelling a workflow for its concurrency limit", "workflow", c.ID, "error", err)
		}
	}
}
