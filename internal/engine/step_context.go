// The engine's StepContext: what a running step reads and buffers, written with its outcome.

package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

var _ workflow.StepContext = (*stepContext)(nil)

// stepContext is the StepContext the engine hands a step: what the step reads, and what it buffers
// (variables, logs, children, signals, cancellations, output, a remote call) until its outcome is
// written.
type stepContext struct {
	context.Context

	engine    *Engine
	workflow  *persistence.Workflow
	attempt   int
	variables map[string]json.RawMessage
	changed   map[string]bool
	logs      []*persistence.ActivityLog
	children  []workflow.ChildRequest
	// signals and cancels are the step's effects on other workflows (step_effects.go).
	signals []workflow.SignalRequest
	cancels []workflow.CancelRequest
	signal  *persistence.Signal
	output  json.RawMessage
	remote  *remoteCall // what CallRemote found or asked for
	// overLimit is the first write over the engine's Limits: it fails the attempt (step_limits.go).
	overLimit *workflow.LimitError
	// varsBytes is the size of variables as JSON once varsSized (counted at the first SetVar).
	varsBytes int
	varsSized bool
	// logBytes counts what the step logged; logsCut says the rest is dropped.
	logBytes int
	logsCut  bool
	// attrs are the search attributes the step set (nil: removed); attrNames the names the
	// workflow has, read at the first SetAttribute.
	attrs     map[string]*persistence.AttributeValue
	attrNames map[string]bool
}

// WorkflowID is the ID of the running workflow.
func (c *stepContext) WorkflowID() int64 { return c.workflow.ID }

// Workflow returns the running workflow's row as it was claimed (read-only).
func (c *stepContext) Workflow() persistence.Workflow { return *c.workflow }

// State is the name of the running state.
func (c *stepContext) State() string { return c.workflow.State }

// Attempt counts the runs of this state, from 1.
func (c *stepContext) Attempt() int { return c.attempt }

// Input decodes the workflow's input into v.
func (c *stepContext) Input(v any) error {
	if err := json.Unmarshal(c.workflow.Input, v); err != nil {
		return workflow.NonRetryable(fmt.Errorf("error decoding the workflow's input: %w", err))
	}
	return nil
}

// RawInput is the workflow's input as JSON.
func (c *stepContext) RawInput() json.RawMessage { return c.workflow.Input }

// Var decodes variable key into v and reports whether it is set.
func (c *stepContext) Var(key string, v any) (bool, error) {
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
func (c *stepContext) SetVar(key string, v any) error {
	// What the API refuses to store, a step may not store either (PostgreSQL could not).
	if err := workflow.CheckString("key", key, workflow.MaxKeyLength); err != nil {
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
	if err := workflow.CheckJSON("value", b); err != nil {
		return fmt.Errorf("variable %.40q cannot be stored: %w", key, err)
	}
	l := c.engine.limits
	if len(b) > l.ValueBytes {
		return c.refuse(&workflow.LimitError{What: fmt.Sprintf("variable %.40q", key), Size: len(b), Max: l.ValueBytes, Unit: "bytes", Flag: "max-value-bytes"})
	}
	size := c.varsBytes + len(key) + 4 + len(b)
	if old, ok := c.variables[key]; ok {
		size -= len(key) + 4 + len(old)
	}
	if size > l.VariablesBytes {
		return c.refuse(&workflow.LimitError{What: fmt.Sprintf("the workflow's variables with variable %.40q", key), Size: size, Max: l.VariablesBytes,
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
func (c *stepContext) Log(name, value string) {
	if c.logsCut {
		return
	}
	l := c.engine.limits
	name, value = storableText(name, workflow.MaxKeyLength), storableText(value, l.ValueBytes)
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
func (c *stepContext) Signal() *persistence.Signal { return c.signal }

// SetOutput records the step's output on its task instance.
func (c *stepContext) SetOutput(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("error encoding step output: %w", err)
	}
	if err := workflow.CheckJSON("output", b); err != nil {
		return fmt.Errorf("step output cannot be stored: %w", err)
	}
	if l := c.engine.limits; len(b) > l.ValueBytes {
		return c.refuse(&workflow.LimitError{What: "the step's output", Size: len(b), Max: l.ValueBytes, Unit: "bytes", Flag: "max-value-bytes"})
	}
	c.output = b
	return nil
}

// StartChild asks for a child workflow, created in the transaction that completes this step (so a
// step that runs again starts no duplicate). Pair it with a WAIT state that waits for children.
func (c *stepContext) StartChild(req workflow.ChildRequest) {
	c.children = append(c.children, req)
}

// RecordSideEffect returns the value recorded under key for this workflow, or calls fn and
// records its result (see workflow.SideEffect).
func (c *stepContext) RecordSideEffect(key string, fn func() (any, error)) (json.RawMessage, error) {
	store := c.engine.store
	existing, err := store.SideEffectGet(c, c.workflow.ID, key)
	if err == nil {
		return existing.Value, nil
	}
	if !errors.Is(err, persistence.ErrNotFound) {
		return nil, err
	}
	v, err := fn()
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("error encoding side effect %q: %w", key, err)
	}
	if l := c.engine.limits; len(b) > l.ValueBytes {
		return nil, c.refuse(&workflow.LimitError{What: fmt.Sprintf("side effect %.40q", key), Size: len(b), Max: l.ValueBytes, Unit: "bytes", Flag: "max-value-bytes"})
	}
	stored, err := store.SideEffectRecord(context.WithoutCancel(c), persistence.SideEffectRecordParams{
		WorkflowID: c.workflow.ID, Key: key, ValueType: fmt.Sprintf("%T", v), Value: b})
	if err != nil {
		return nil, err
	}
	return stored.Value, nil
}

// changedKeys lists the variables the step set or removed, sorted.
func (c *stepContext) changedKeys() []string {
	keys := make([]string, 0, len(c.changed))
	for k := range c.changed {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// variablesSize is the length of the JSON object vars encodes to (as encoding/json writes it,
// up to escapes in keys): what a step's variables will take once merged.
func variablesSize(vars map[string]json.RawMessage) int {
	n := 2
	for k, v := range vars {
		n += len(k) + 3 + len(v) + 1 // "key": value,
	}
	return n
}

// refuse keeps the first limit a step's write went over: the attempt fails with it even when the
// handler ignores the error it got, and the step's writes are dropped.
func (c *stepContext) refuse(err *workflow.LimitError) error {
	if c.overLimit == nil {
		c.overLimit = err
	}
	return workflow.NonRetryable(err)
}

// CallRemote calls a function served by remote workers, durably: the first run of the step asks
// for a task and gets ErrRemotePending, which the handler returns as its error (so the workflow
// waits without holding a worker); once a worker completes the task, the step runs again from the
// start, and CallRemote returns the worker's output. A failed task is a *RemoteError (wrapped in
// NonRetryable unless the worker said a retry may help), which fails the attempt under the
// state's retry policy, or which the handler may handle itself. One call per step: the step is
// the unit that runs again.
func (c *stepContext) CallRemote(function string, input any) (json.RawMessage, error) {
	if err := workflow.CheckString("function", function, workflow.MaxKeyLength); err != nil || function == "" {
		return nil, workflow.NonRetryable(fmt.Errorf("remote function name %.40q is not valid", function))
	}
	if c.remote != nil {
		return nil, workflow.NonRetryable(fmt.Errorf("a step calls one remote function at most (%s, then %s)", c.remote.function, function))
	}
	rc := &remoteCall{function: function}
	c.remote = rc
	cur, err := c.engine.store.RemoteTaskCurrent(c, c.workflow.ID)
	if err != nil && !errors.Is(err, persistence.ErrNotFound) {
		return nil, err
	}
	if cur != nil && cur.State == c.workflow.State && cur.Function == function {
		switch {
		case cur.Status == persistence.RemoteTaskSucceeded:
			rc.used = cur
			return cur.Output, nil
		case cur.Status == persistence.RemoteTaskFailed:
			rc.used = cur
			return nil, remoteFailure(cur)
		case cur.Status == persistence.RemoteTaskPending || cur.Status == persistence.RemoteTaskLeased:
			rc.existing = cur
			return nil, workflow.ErrRemotePending
		}
	}
	raw, err := json.Marshal(input)
	if err != nil {
		return nil, workflow.NonRetryable(fmt.Errorf("error encoding the input of remote function %s: %w", function, err))
	}
	if err := workflow.CheckJSON("input", raw); err != nil {
		return nil, workflow.NonRetryable(fmt.Errorf("the input of remote function %s cannot be stored: %w", function, err))
	}
	if l := c.engine.limits; len(raw) > l.ValueBytes {
		return nil, c.refuse(&workflow.LimitError{What: "the input of remote function " + function, Size: len(raw), Max: l.ValueBytes, Unit: "bytes", Flag: "max-value-bytes"})
	}
	rc.create = &persistence.RemoteTask{Function: function, Input: raw}
	return nil, workflow.ErrRemotePending
}

// SendSignal asks for a signal to another workflow, delivered in the transaction that completes
// this step. A signal no workflow could take (no name, a payload that is not JSON or over the
// engine's Limits) is refused now.
func (c *stepContext) SendSignal(req workflow.SignalRequest) error {
	if err := c.engine.checkSignal(signalParamsOf(req)); err != nil {
		return err
	}
	for _, cr := range req.Cancels {
		if err := changeParamsOf(cr).Validate(); err != nil {
			return err
		}
	}
	c.signals = append(c.signals, req)
	return nil
}

// CancelWorkflow asks for a workflow (and its descendants) to be cancelled in the transaction that
// completes this step.
func (c *stepContext) CancelWorkflow(req workflow.CancelRequest) error {
	if err := changeParamsOf(req).Validate(); err != nil {
		return err
	}
	c.cancels = append(c.cancels, req)
	return nil
}

// Reader returns what the step may read beyond its own workflow.
func (c *stepContext) Reader() workflow.Reader { return stepReader{c.engine} }
