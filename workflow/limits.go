package workflow

import (
	"fmt"
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
func (l Limits) WithDefaults() Limits {
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
