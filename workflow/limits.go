package workflow

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cairnflow/cairn/persistence"
)

// Limits bound what one workflow may store and do, so that one workflow cannot fill the disk,
// reset a database connection or keep the workers busy for ever. They hold for the API and for
// steps (Go handlers and documents) alike. A zero field takes DefaultLimits' value.
type Limits struct {
	// ValueBytes bounds one JSON value, as compact JSON text: a workflow's input, one variable, a
	// step's output, a signal's payload, a form's data, a child's input, a schedule's input.
	ValueBytes int
	// VariablesBytes bounds a workflow's variables as a whole (their JSON object), and the inputs
	// of the children one step starts, together.
	VariablesBytes int
	// Steps bounds the attempts one workflow runs (each run of a step, failed or not, counts);
	// the attempt after the last fails the workflow. A manual retry starts a new budget.
	Steps int
	// ChildDepth bounds how deep a chain of children goes: a workflow with ChildDepth ancestors
	// starts no child (its step fails).
	ChildDepth int
	// ChildrenPerStep bounds the children one step starts.
	ChildrenPerStep int
	// Children bounds the children one workflow starts in all its steps.
	Children int
	// TreeWorkflows bounds the descendants of one top-level workflow, at every depth: workflows
	// that each start two copies of themselves would otherwise double at every level up to
	// ChildDepth (2^32 workflows).
	TreeWorkflows int
}

// DefaultLimits: a value as large as the API's default request body (1 MiB), four of them in a
// workflow's variables, 10,000 steps (a retry policy allows at most MaxRetryAttempts per state),
// 32 levels of children, 10,000 children per step (demo.fanout's most) and ten times that in all,
// for one workflow and for a whole tree of them.
var DefaultLimits = Limits{ValueBytes: 1 << 20, VariablesBytes: 4 << 20, Steps: 10000, ChildDepth: 32, ChildrenPerStep: 10000, Children: 100000,
	TreeWorkflows: 100000}

// MaxRetryAttempts bounds the attempts a retry policy may allow (Go definitions and documents):
// a policy of two billion attempts without a delay is refused at registration or deploy.
const MaxRetryAttempts = 1000

// CheckRetryAttempts refuses, with INVALID_INPUT naming field, a retry policy's attempt count above
// MaxRetryAttempts.
func CheckRetryAttempts(field string, attempts int) error {
	if attempts > MaxRetryAttempts {
		return invalid(field, "a retry policy allows at most %d attempts, not %d", MaxRetryAttempts, attempts)
	}
	return nil
}

// withDefaults fills in the zero fields.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	for _, f := range []struct{ v, def *int }{{&l.ValueBytes, &d.ValueBytes}, {&l.VariablesBytes, &d.VariablesBytes},
		{&l.Steps, &d.Steps}, {&l.ChildDepth, &d.ChildDepth}, {&l.ChildrenPerStep, &d.ChildrenPerStep}, {&l.Children, &d.Children},
		{&l.TreeWorkflows, &d.TreeWorkflows}} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	return l
}

// Limits returns the limits the engine applies.
func (e *Engine) Limits() Limits { return e.limits }

// LimitError says which limit a step's write went over. A step that meets one fails without a
// retry (the same write would not shrink) and goes to its ERROR state; the workflow's lastError
// says which limit, and the Options field (and cairn serve flag) that sets it.
type LimitError struct {
	// What went over: `variable "cart"`, "output", "the variables", "child 3's input", ...
	What string
	// Size and Max are in the limit's unit (bytes, children, levels, steps).
	Size, Max int
	// Unit names what Size counts: "bytes", "children", "levels", "steps".
	Unit string
	// Flag is the cairn serve flag that sets the limit (max-value-bytes, ...).
	Flag string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s: %d %s, the limit is %d (--%s)", e.What, e.Size, e.Unit, e.Max, e.Flag)
}

// checkValue refuses, with INVALID_INPUT naming field, a JSON value larger than ValueBytes.
func (l Limits) checkValue(field string, raw []byte) error {
	if len(raw) > l.ValueBytes {
		return invalid(field, "the value is %d bytes, over the limit of %d bytes (--max-value-bytes)", len(raw), l.ValueBytes)
	}
	return nil
}

// checkVariables refuses, with INVALID_INPUT naming field, variables one of which is larger than
// ValueBytes or which together (all, as the object raw) are larger than VariablesBytes.
func (l Limits) checkVariables(field string, changes map[string]json.RawMessage, all []byte) error {
	for k, v := range changes {
		if len(v) > l.ValueBytes {
			return invalid(field, "variable %.40q is %d bytes, over the limit of %d bytes per value (--max-value-bytes)", k, len(v), l.ValueBytes)
		}
	}
	if len(all) > l.VariablesBytes {
		return invalid(field, "the variables would be %d bytes, over the limit of %d bytes (--max-variables-bytes)", len(all), l.VariablesBytes)
	}
	return nil
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
func (c *StepContext) refuse(err *LimitError) error {
	if c.overLimit == nil {
		c.overLimit = err
	}
	return NonRetryable(err)
}

// checkStepLimits checks what a step that succeeded asks to write before any of it is: a value or
// output refused earlier, its children (how many, their input, how deep), its variables as a
// whole. A *LimitError (non-retryable) when one is over.
func (e *Engine) checkStepLimits(sc *StepContext) error {
	if sc == nil {
		return nil
	}
	if sc.overLimit != nil {
		return NonRetryable(sc.overLimit)
	}
	l := e.limits
	if n := len(sc.children); n > l.ChildrenPerStep {
		return NonRetryable(&LimitError{What: "the children this step starts", Size: n, Max: l.ChildrenPerStep, Unit: "children", Flag: "max-children-per-step"})
	}
	inputs := 0
	for i, ch := range sc.children {
		if len(ch.Input) > l.ValueBytes {
			return NonRetryable(&LimitError{What: fmt.Sprintf("the input of child %d (%.40s)", i+1, ch.Type), Size: len(ch.Input), Max: l.ValueBytes,
				Unit: "bytes", Flag: "max-value-bytes"})
		}
		inputs += len(ch.Input)
	}
	// Together the children's inputs are bounded like the variables: one step writes no more.
	if inputs > l.VariablesBytes {
		return NonRetryable(&LimitError{What: "the inputs of the children this step starts", Size: inputs, Max: l.VariablesBytes, Unit: "bytes",
			Flag: "max-variables-bytes"})
	}
	if len(sc.children) > 0 {
		// Counted only up to the limit: a step that starts children reads at most that many
		// entries of the parent index.
		had, err := e.store.WorkflowChildCount(context.WithoutCancel(sc), sc.workflow.ID, l.Children)
		if err != nil {
			return err
		}
		if had+len(sc.children) > l.Children {
			return NonRetryable(&LimitError{What: "the children of this workflow, with those this step starts", Size: had + len(sc.children),
				Max: l.Children, Unit: "children", Flag: "max-children"})
		}
		// The whole tree, counted up to its limit through the root index like the children.
		root := sc.workflow.ID
		if sc.workflow.RootID != nil {
			root = *sc.workflow.RootID
		}
		inTree, err := e.store.WorkflowTreeCount(context.WithoutCancel(sc), root, l.TreeWorkflows)
		if err != nil {
			return err
		}
		if inTree+len(sc.children) > l.TreeWorkflows {
			return NonRetryable(&LimitError{What: "the descendants of this workflow's top-level workflow, with those this step starts",
				Size: inTree + len(sc.children), Max: l.TreeWorkflows, Unit: "workflows", Flag: "max-tree-workflows"})
		}
	}
	if len(sc.children) > 0 && sc.workflow.ParentID != nil {
		// Only a child has ancestors to count: a chain of workflows that start themselves stops
		// at ChildDepth instead of filling the database.
		ancestors, err := e.store.WorkflowAncestors(context.WithoutCancel(sc), sc.workflow.ID, l.ChildDepth)
		if err != nil {
			return err
		}
		if ancestors+1 > l.ChildDepth {
			return NonRetryable(&LimitError{What: "the depth of the children this step starts", Size: ancestors + 1, Max: l.ChildDepth,
				Unit: "levels", Flag: "max-child-depth"})
		}
	}
	if n := variablesSize(sc.variables); len(sc.changed) > 0 && n > l.VariablesBytes {
		return NonRetryable(&LimitError{What: "the workflow's variables", Size: n, Max: l.VariablesBytes, Unit: "bytes", Flag: "max-variables-bytes"})
	}
	return nil
}

// stepsAfter is the workflow's count of attempts once the outcome is written: one more when an
// attempt ran (a WAIT state woken before its time runs none).
func (o *outcome) stepsAfter() int {
	if o.task != nil {
		return o.workflow.Steps + 1
	}
	return o.workflow.Steps
}

// outOfSteps fails a workflow whose step budget has run out (nil while steps remain): a retry
// policy without a delay, or a loop between states, ends there instead of running for ever. It
// goes to its ERROR state, or is FAILED where it is when its definition has none: no person can
// give it more steps but by retrying it.
func (e *Engine) outOfSteps(o *outcome, def *Definition, state *State) *outcome {
	if o.workflow.Steps < e.limits.Steps {
		return nil
	}
	o = e.failure(o, def, state, NonRetryable(&LimitError{What: "the step budget ran out; steps run", Size: o.workflow.Steps,
		Max: e.limits.Steps, Unit: "steps", Flag: "max-steps"}), persistence.TaskFailed)
	if o.completion.Status != persistence.StatusFailed {
		o.completion.Status, o.completion.NextActivation, o.completion.Finished = persistence.StatusFailed, nil, timePtr(persistence.Now())
	}
	return o
}
