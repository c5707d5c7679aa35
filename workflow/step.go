package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/cairnflow/cairn/persistence"
)

// StepFunc runs one state of a workflow. It returns what happens next; an error is a failed
// attempt, retried by the state's policy (wrap it with NonRetryable when retrying cannot help).
type StepFunc func(ctx *StepContext) (Next, error)

// nextKind enumerates what a step can ask for.
type nextKind int

const (
	nextMove nextKind = iota + 1
	nextRetry
	nextManual
	nextFinish
	nextFail
)

// Next is what a step asks for when it returns.
type Next struct {
	kind  nextKind
	state string
	at    time.Time
	delay time.Duration
	text  string
	// failure is why the attempt failed although the step went on (see AfterFailure).
	failure string
}

// MoveTo moves the workflow to a state now.
func MoveTo(state string) Next { return Next{kind: nextMove, state: state} }

// MoveToAt moves the workflow to a state, to run at a time (a durable timer). For a WAIT state
// the time is when the workflow is woken even if what it waits for has not come (see
// WaitFor.DeadlineVariable).
func MoveToAt(state string, at time.Time) Next { return Next{kind: nextMove, state: state, at: at} }

// RetryAfter runs the same state again after a delay, without counting a failure (polling).
func RetryAfter(d time.Duration) Next { return Next{kind: nextRetry, delay: d} }

// GoManual stops the workflow in its current state with status MANUAL, for a person to act.
func GoManual(text string) Next { return Next{kind: nextManual, text: text} }

// Finish moves the workflow to its END state.
func Finish() Next { return Next{kind: nextFinish} }

// Fail moves the workflow to its ERROR state (MANUAL when it has none), without retrying.
func Fail(reason string) Next { return Next{kind: nextFail, text: reason} }

// WithText sets the state text recorded with the move.
func (n Next) WithText(text string) Next { n.text = text; return n }

// ChildRequest is a child workflow a step starts; it is created when the step completes.
type ChildRequest struct {
	Type        string
	Input       json.RawMessage
	ExternalID  string
	BusinessKey string
	Priority    int
	// Version is the definition version the child runs (0: the newest).
	Version int
}

// StepContext is what a step handler gets: the workflow, its input and variables, the signal it
// waited for, and the means to record side effects, log, and start children. It is a
// context.Context carrying the step's deadline, cancelled when the workflow is cancelled.
type StepContext struct {
	context.Context

	engine    *Engine
	workflow  *persistence.Workflow
	attempt   int
	variables map[string]json.RawMessage
	changed   map[string]bool
	logs      []*persistence.ActivityLog
	children  []ChildRequest
	// signals and cancels are the step's effects on other workflows (step_effects.go).
	signals []SignalRequest
	cancels []CancelRequest
	signal  *persistence.Signal
	output  json.RawMessage
	remote  *remoteCall // what CallRemote found or asked for
	// overLimit is the first write over the engine's Limits: it fails the attempt (limits.go).
	overLimit *LimitError
	// varsBytes is the size of variables as JSON once varsSized (counted at the first SetVar).
	varsBytes int
	varsSized bool
	// logBytes counts what the step logged; logsCut says the rest is dropped.
	logBytes int
	logsCut  bool
}

// WorkflowID is the ID of the running workflow.
func (c *StepContext) WorkflowID() int64 { return c.workflow.ID }

// Workflow returns the running workflow's row as it was claimed (read-only).
func (c *StepContext) Workflow() persistence.Workflow { return *c.workflow }

// State is the name of the running state.
func (c *StepContext) State() string { return c.workflow.State }

// Attempt counts the runs of this state, from 1.
func (c *StepContext) Attempt() int { return c.attempt }

// Input decodes the workflow's input into v.
func (c *StepContext) Input(v any) error {
	if err := json.Unmarshal(c.workflow.Input, v); err != nil {
		return NonRetryable(fmt.Errorf("error decoding the workflow's input: %w", err))
	}
	return nil
}

// RawInput is the workflow's input as JSON.
func (c *StepContext) RawInput() json.RawMessage { return c.workflow.Input }

// Var decodes variable key into v and reports whether it is set.
func (c *StepContext) Var(key string, v any) (bool, error) {
	raw, ok := c.variables[key]
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("error decoding variable %q: %w", key, err)
	}
	return true, nil
}

// SetVar sets variable key to v (JSON-encoded); nil removes it. Recorded when the step completes,
// with the action it belongs to. A value over the engine's Limits is refused with a *LimitError
// (non-retryable), and the attempt fails with it even if the handler goes on.
func (c *StepContext) SetVar(key string, v any) error {
	// What the API refuses to store, a step may not store either (PostgreSQL could not).
	if err := CheckString("key", key, MaxKeyLength); err != nil {
		return fmt.Errorf("variable %.40q cannot be stored: %w", key, err)
	}
	if !c.varsSized {
		c.varsBytes, c.varsSized = variablesSize(c.variables), true
	}
	if v == nil {
		if old, ok := c.variables[key]; ok {
			c.varsBytes -= len(key) + 4 + len(old)
		}
		delete(c.variables, key)
		c.changed[key] = true
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("error encoding variable %q: %w", key, err)
	}
	if err := CheckJSON("value", b); err != nil {
		return fmt.Errorf("variable %.40q cannot be stored: %w", key, err)
	}
	l := c.engine.limits
	if len(b) > l.ValueBytes {
		return c.refuse(&LimitError{What: fmt.Sprintf("variable %.40q", key), Size: len(b), Max: l.ValueBytes, Unit: "bytes", Flag: "max-value-bytes"})
	}
	size := c.varsBytes + len(key) + 4 + len(b)
	if old, ok := c.variables[key]; ok {
		size -= len(key) + 4 + len(old)
	}
	if size > l.VariablesBytes {
		return c.refuse(&LimitError{What: fmt.Sprintf("the workflow's variables with variable %.40q", key), Size: size, Max: l.VariablesBytes,
			Unit: "bytes", Flag: "max-variables-bytes"})
	}
	c.varsBytes = size
	c.variables[key] = b
	c.changed[key] = true
	return nil
}

// Log records an activity log entry, written when the step completes. A value longer than the
// engine's ValueBytes is cut; once a step's logs reach its VariablesBytes, the rest are dropped
// (one entry says so): a step cannot fill the disk through its logs.
func (c *StepContext) Log(name, value string) {
	if c.logsCut {
		return
	}
	l := c.engine.limits
	name, value = storableText(name, MaxKeyLength), storableText(value, l.ValueBytes)
	if c.logBytes+len(name)+len(value) > l.VariablesBytes {
		c.logsCut = true
		name, value = "cairn", fmt.Sprintf("later logs of this step were dropped: they passed %d bytes (--max-variables-bytes)", l.VariablesBytes)
	}
	c.logBytes += len(name) + len(value)
	c.logs = append(c.logs, &persistence.ActivityLog{WorkflowID: c.workflow.ID, Name: name, Value: value, At: persistence.Now()})
}

// storableText makes s storable as text on every database (no NUL, valid UTF-8) and cuts it to
// at most max bytes, saying so.
func storableText(s string, max int) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "\uFFFD"), "\uFFFD")
	if len(s) <= max {
		return s
	}
	const cut = " [cut]"
	if max <= len(cut) {
		return strings.ToValidUTF8(s[:max], "")
	}
	return strings.ToValidUTF8(s[:max-len(cut)], "") + cut
}

// Signal returns the signal a WAIT state waited for (nil in other states).
func (c *StepContext) Signal() *persistence.Signal { return c.signal }

// SetOutput records the step's output on its task instance.
func (c *StepContext) SetOutput(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("error encoding step output: %w", err)
	}
	if err := CheckJSON("output", b); err != nil {
		return fmt.Errorf("step output cannot be stored: %w", err)
	}
	if l := c.engine.limits; len(b) > l.ValueBytes {
		return c.refuse(&LimitError{What: "the step's output", Size: len(b), Max: l.ValueBytes, Unit: "bytes", Flag: "max-value-bytes"})
	}
	c.output = b
	return nil
}

// StartChild asks for a child workflow, created in the transaction that completes this step (so a
// step that runs again starts no duplicate). Pair it with a WAIT state that waits for children.
func (c *StepContext) StartChild(req ChildRequest) {
	c.children = append(c.children, req)
}

// SideEffect returns the value recorded under key for this workflow, or calls fn, records its
// result before returning it, and never calls fn for that key again: a step that runs again (a
// retry, or another executor after a crash) gets the first value.
func SideEffect[T any](ctx *StepContext, key string, fn func() (T, error)) (T, error) {
	var zero T
	store := ctx.engine.store
	existing, err := store.SideEffectGet(ctx, ctx.workflow.ID, key)
	if err == nil {
		var v T
		if err := json.Unmarshal(existing.Value, &v); err != nil {
			return zero, fmt.Errorf("error decoding side effect %q: %w", key, err)
		}
		return v, nil
	}
	if !errors.Is(err, persistence.ErrNotFound) {
		return zero, err
	}
	v, err := fn()
	if err != nil {
		return zero, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return zero, fmt.Errorf("error encoding side effect %q: %w", key, err)
	}
	if l := ctx.engine.limits; len(b) > l.ValueBytes {
		return zero, ctx.refuse(&LimitError{What: fmt.Sprintf("side effect %.40q", key), Size: len(b), Max: l.ValueBytes, Unit: "bytes", Flag: "max-value-bytes"})
	}
	stored, err := store.SideEffectRecord(context.WithoutCancel(ctx), persistence.SideEffectRecordParams{
		WorkflowID: ctx.workflow.ID, Key: key, ValueType: fmt.Sprintf("%T", v), Value: b})
	if err != nil {
		return zero, err
	}
	var out T
	if err := json.Unmarshal(stored.Value, &out); err != nil {
		return zero, fmt.Errorf("error decoding side effect %q: %w", key, err)
	}
	return out, nil
}

// changedKeys lists the variables the step set or removed, sorted.
func (c *StepContext) changedKeys() []string {
	keys := make([]string, 0, len(c.changed))
	for k := range c.changed {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
