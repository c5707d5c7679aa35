// Package workflow is cairn's Go SDK: workflow definitions (Definition and its States, with retry
// policies and timeouts), their step handlers (a StepFunc reads a StepContext and returns a Next:
// MoveTo, Finish, Fail, RetryAfter, ...), side effects, errors and their codes, and the parameter
// and result types of the operations.
//
// A program runs definitions on a node (package cairn at the module's root): cairn.New, then
// Node.Register and Node.Run, and the operations (Node.Start, Node.Signal, Node.Wait, ...) take and
// return this package's types. The engine that runs steps and applies the state machine's rules
// lives in internal/engine; it implements StepContext.
package workflow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"
)

// StateKind says what a state is for.
type StateKind string

// The state kinds.
const (
	// Start is where a workflow begins; a definition has exactly one.
	Start StateKind = "START"
	// Normal runs its handler and moves on.
	Normal StateKind = "NORMAL"
	// Wait waits for a signal or for the workflow's children, then runs its handler (if any) or
	// moves to its only next state.
	Wait StateKind = "WAIT"
	// Manual stops the workflow (status MANUAL) until a person moves it on.
	Manual StateKind = "MANUAL"
	// End finishes the workflow (status FINISHED).
	End StateKind = "END"
	// ErrorKind fails the workflow (status FAILED).
	ErrorKind StateKind = "ERROR"
)

// RetryPolicy says how often a failing state runs again and how long it waits in between:
// exponential backoff from MinBackoff doubling up to MaxBackoff, each delay spread by ±Jitter
// (a fraction, 0.2 = 20%).
type RetryPolicy struct {
	MaxAttempts int           `json:"maxAttempts"`
	MinBackoff  time.Duration `json:"minBackoff"`
	MaxBackoff  time.Duration `json:"maxBackoff"`
	Jitter      float64       `json:"jitter"`
}

// DefaultRetryPolicy is used by definitions that set none: 5 attempts, 1s to 5m.
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 5, MinBackoff: time.Second, MaxBackoff: 5 * time.Minute, Jitter: 0.2}

// Backoff returns the delay before attempt retries+1 (retries counts the failures so far, from 1).
func (p RetryPolicy) Backoff(retries int) time.Duration {
	d := p.MinBackoff
	for i := 1; i < retries && d < p.MaxBackoff; i++ {
		d *= 2
	}
	if p.MaxBackoff > 0 && d > p.MaxBackoff {
		d = p.MaxBackoff
	}
	if p.Jitter > 0 && d > 0 {
		spread := float64(d) * p.Jitter
		d = time.Duration(float64(d) - spread + rand.Float64()*2*spread)
	}
	return d
}

// WaitFor says what a WAIT state waits for: a signal by name, or every child workflow to end.
type WaitFor struct {
	Signal string `json:"signal,omitempty"`
	// Signals are more names it takes a signal of, besides Signal: the oldest unconsumed signal
	// of any of them wakes it.
	Signals []string `json:"signals,omitempty"`
	// AnySignal takes a signal of any name.
	AnySignal bool `json:"anySignal,omitempty"`
	Children  bool `json:"children,omitempty"`
	// DeadlineVariable names a workflow variable holding a time (RFC 3339): once it has passed,
	// the state's handler runs although what it waits for has not come (Signal returns nil), so
	// the handler decides what the timeout means. Enter the state with MoveToAt(state, deadline)
	// to be woken then.
	DeadlineVariable string `json:"deadlineVariable,omitempty"`
}

// State is one state of a definition.
type State struct {
	Name        string    `json:"name"`
	Kind        StateKind `json:"kind"`
	Description string    `json:"description,omitempty"`
	// Handler runs the state (START and NORMAL need one; WAIT may have one).
	Handler StepFunc `json:"-"`
	// Next lists the states this one may move to.
	Next []string `json:"next,omitempty"`
	// Retry overrides the definition's retry policy for this state.
	Retry *RetryPolicy `json:"retry,omitempty"`
	// Timeout bounds one run of the handler (a WAIT state: the whole wait); 0 means the definition's.
	Timeout time.Duration `json:"timeout,omitempty"`
	// WaitFor is what a WAIT state waits for.
	WaitFor *WaitFor `json:"waitFor,omitempty"`
	// FormSchema is the JSON Schema of the form a person submits in a MANUAL or WAIT state.
	FormSchema json.RawMessage `json:"formSchema,omitempty"`
}

// Definition is a workflow type: its states and policies. Register it with Engine.Register.
type Definition struct {
	Type        string  `json:"type"`
	Description string  `json:"description,omitempty"`
	States      []State `json:"states"`
	// DefaultRetry is the retry policy of states that set none (DefaultRetryPolicy when zero).
	DefaultRetry RetryPolicy `json:"defaultRetry"`
	// StepTimeout bounds one run of a handler when its state sets none (1 minute when zero).
	StepTimeout time.Duration `json:"stepTimeout"`
	// ExecutorGroup is the group of workers that runs this type ("default" when empty).
	ExecutorGroup string `json:"executorGroup"`
	// FlowControl limits how many of its workflows run at once and how often their steps start;
	// a limit set at run time (setFlowControl) wins over it.
	FlowControl *FlowControl `json:"flowControl,omitempty"`
	// StartOn are the event types whose publishing may start a workflow of this type (a deployed
	// document's schedule.on): PublishEvent asks StartEvent whether an event of one does.
	StartOn []string `json:"startOn,omitempty"`
	// StartEvent decides whether a published event (a CloudEvent) starts a workflow of this type,
	// and with which input (a JSON object); nil input: it does not.
	StartEvent func(ctx context.Context, event json.RawMessage) (json.RawMessage, error) `json:"-"`
}

// DefaultStepTimeout bounds a handler's run when neither its state nor its definition says.
const DefaultStepTimeout = time.Minute

// DefaultGroup is the executor group of definitions and workers that name none.
const DefaultGroup = "default"

// WithDefaults fills in what a definition left zero: the retry policy, step timeout and executor
// group that Register gives it.
func (d Definition) WithDefaults() Definition {
	if d.DefaultRetry.MaxAttempts == 0 {
		d.DefaultRetry = DefaultRetryPolicy
	}
	if d.StepTimeout == 0 {
		d.StepTimeout = DefaultStepTimeout
	}
	if d.ExecutorGroup == "" {
		d.ExecutorGroup = DefaultGroup
	}
	return d
}

// State returns the state with a name.
func (d *Definition) State(name string) (*State, bool) {
	for i := range d.States {
		if d.States[i].Name == name {
			return &d.States[i], true
		}
	}
	return nil, false
}

// StartState returns the START state.
func (d *Definition) StartState() *State {
	for i := range d.States {
		if d.States[i].Kind == Start {
			return &d.States[i]
		}
	}
	return nil
}

// FirstOfKind returns the first state of a kind (the END or ERROR a step finishes or fails to).
func (d *Definition) FirstOfKind(k StateKind) *State {
	for i := range d.States {
		if d.States[i].Kind == k {
			return &d.States[i]
		}
	}
	return nil
}

// RetryPolicyOf returns the retry policy of a state.
func (d *Definition) RetryPolicyOf(s *State) RetryPolicy {
	if s != nil && s.Retry != nil {
		return *s.Retry
	}
	return d.DefaultRetry
}

// TimeoutOf returns how long one run of a state's handler may take.
func (d *Definition) TimeoutOf(s *State) time.Duration {
	if s != nil && s.Timeout > 0 {
		return s.Timeout
	}
	return d.StepTimeout
}

// Validate checks a definition and names the state at fault: one START, unique names, known kinds,
// transitions to known states, handlers where needed, an END reachable from START.
func (d *Definition) Validate() error {
	if err := d.checkStorable(); err != nil {
		return err
	}
	if d.Type == "" {
		return invalid("type", "a definition needs a type")
	}
	if len(d.States) == 0 {
		return invalid("states", "definition %s has no states", d.Type)
	}
	names := map[string]*State{}
	starts := 0
	for i := range d.States {
		s := &d.States[i]
		if s.Name == "" {
			return invalid("states", "definition %s: state #%d has no name", d.Type, i+1)
		}
		if names[s.Name] != nil {
			return invalid("states", "definition %s: state %q is defined twice", d.Type, s.Name)
		}
		names[s.Name] = s
		switch s.Kind {
		case Start, Normal:
			if s.Handler == nil {
				return invalid("states", "definition %s: state %q (%s) needs a handler", d.Type, s.Name, s.Kind)
			}
			starts += map[bool]int{true: 1}[s.Kind == Start]
		case Wait:
			if s.WaitFor == nil || (!s.WaitFor.TakesSignals() && !s.WaitFor.Children) {
				return invalid("states", "definition %s: WAIT state %q must wait for a signal or for children", d.Type, s.Name)
			}
			if s.Handler == nil && len(s.Next) != 1 {
				return invalid("states", "definition %s: WAIT state %q without a handler needs exactly one next state", d.Type, s.Name)
			}
		case Manual:
		case End, ErrorKind:
			if len(s.Next) > 0 {
				return invalid("states", "definition %s: %s state %q cannot have next states", d.Type, s.Kind, s.Name)
			}
		default:
			return invalid("states", "definition %s: state %q has unknown kind %q", d.Type, s.Name, s.Kind)
		}
		if len(s.FormSchema) > 0 {
			if s.Kind != Wait && s.Kind != Manual {
				return invalid("states", "definition %s: state %q: only WAIT and MANUAL states take a form", d.Type, s.Name)
			}
			if _, err := CompileFormSchema(d.Type, s.Name, s.FormSchema); err != nil {
				return err
			}
		}
		if s.Retry != nil && s.Retry.MaxAttempts < 1 {
			return invalid("states", "definition %s: state %q: retry needs at least one attempt", d.Type, s.Name)
		}
		if s.Retry != nil && s.Retry.MaxAttempts > MaxRetryAttempts {
			return invalid("states", "definition %s: state %q: a retry policy allows at most %d attempts, not %d", d.Type, s.Name, MaxRetryAttempts, s.Retry.MaxAttempts)
		}
	}
	if starts != 1 {
		return invalid("states", "definition %s must have exactly one START state, has %d", d.Type, starts)
	}
	for _, s := range d.States {
		for _, n := range s.Next {
			if names[n] == nil {
				return invalid("states", "definition %s: state %q moves to unknown state %q", d.Type, s.Name, n)
			}
		}
	}
	// An END must be reachable from START through the declared transitions.
	seen := map[string]bool{}
	queue := []string{d.StartState().Name}
	reachedEnd := false
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if seen[n] {
			continue
		}
		seen[n] = true
		if names[n].Kind == End {
			reachedEnd = true
		}
		queue = append(queue, names[n].Next...)
	}
	if !reachedEnd {
		return invalid("states", "definition %s: no END state is reachable from START state %q", d.Type, d.StartState().Name)
	}
	if d.DefaultRetry.MaxAttempts < 0 {
		return invalid("defaultRetry", "definition %s: retry attempts cannot be negative", d.Type)
	}
	if err := CheckRetryAttempts("defaultRetry", d.DefaultRetry.MaxAttempts); err != nil {
		return err
	}
	if d.FlowControl != nil {
		return d.FlowControl.Validate("flowControl")
	}
	return nil
}

// CanMove reports whether a step in state from may move to state to.
func (d *Definition) CanMove(from *State, to string) bool {
	for _, n := range from.Next {
		if n == to {
			return true
		}
	}
	return false
}

// Spec is the canonical JSON form of a definition (no handlers), stored with the definition's
// version; its sha256 is the checksum that tells one version from the next.
func (d *Definition) Spec() (json.RawMessage, string, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return nil, "", fmt.Errorf("error encoding definition %s: %w", d.Type, err)
	}
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:]), nil
}

// ParseSpec decodes a stored spec (handlers are not part of it).
func ParseSpec(spec []byte) (*Definition, error) {
	d := new(Definition)
	if err := json.Unmarshal(spec, d); err != nil {
		return nil, fmt.Errorf("error decoding definition spec: %w", err)
	}
	return d, nil
}
