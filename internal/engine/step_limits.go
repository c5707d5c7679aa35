// The engine's side of the Limits: what it checks of an operation's values and of a step's writes.

package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// Limits returns the limits the engine applies.
func (e *Engine) Limits() workflow.Limits { return e.limits }

// checkValue refuses, with INVALID_INPUT naming field, a JSON value larger than ValueBytes.
func checkValue(l workflow.Limits, field string, raw []byte) error {
	if len(raw) > l.ValueBytes {
		return invalid(field, "the value is %d bytes, over the limit of %d bytes (--max-value-bytes)", len(raw), l.ValueBytes)
	}
	return nil
}

// checkVariablesSize refuses, with INVALID_INPUT naming field, variables one of which is larger than
// ValueBytes or which together (all, as the object raw) are larger than VariablesBytes.
func checkVariablesSize(l workflow.Limits, field string, changes map[string]json.RawMessage, all []byte) error {
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

// checkStepLimits checks what a step that succeeded asks to write before any of it is: a value or
// output refused earlier, its children (how many, their input, how deep), its variables as a
// whole. A *LimitError (non-retryable) when one is over.
func (e *Engine) checkStepLimits(sc *stepContext) error {
	if sc == nil {
		return nil
	}
	if sc.overLimit != nil {
		return workflow.NonRetryable(sc.overLimit)
	}
	l := e.limits
	if n := len(sc.children); n > l.ChildrenPerStep {
		return workflow.NonRetryable(&workflow.LimitError{What: "the children this step starts", Size: n, Max: l.ChildrenPerStep, Unit: "children", Flag: "max-children-per-step"})
	}
	inputs := 0
	for i, ch := range sc.children {
		if len(ch.Input) > l.ValueBytes {
			return workflow.NonRetryable(&workflow.LimitError{What: fmt.Sprintf("the input of child %d (%.40s)", i+1, ch.Type), Size: len(ch.Input), Max: l.ValueBytes,
				Unit: "bytes", Flag: "max-value-bytes"})
		}
		inputs += len(ch.Input)
	}
	// Together the children's inputs are bounded like the variables: one step writes no more.
	if inputs > l.VariablesBytes {
		return workflow.NonRetryable(&workflow.LimitError{What: "the inputs of the children this step starts", Size: inputs, Max: l.VariablesBytes, Unit: "bytes",
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
			return workflow.NonRetryable(&workflow.LimitError{What: "the children of this workflow, with those this step starts", Size: had + len(sc.children),
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
			return workflow.NonRetryable(&workflow.LimitError{What: "the descendants of this workflow's top-level workflow, with those this step starts",
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
			return workflow.NonRetryable(&workflow.LimitError{What: "the depth of the children this step starts", Size: ancestors + 1, Max: l.ChildDepth,
				Unit: "levels", Flag: "max-child-depth"})
		}
	}
	if n := variablesSize(sc.variables); len(sc.changed) > 0 && n > l.VariablesBytes {
		return workflow.NonRetryable(&workflow.LimitError{What: "the workflow's variables", Size: n, Max: l.VariablesBytes, Unit: "bytes", Flag: "max-variables-bytes"})
	}
	return nil
}

// stepsAfter is the workflow's count of attempts once the outcome is written: one more when an
// attempt ran (a WAIT state woken before its time runs none).
func (o *Outcome) stepsAfter() int {
	if o.task != nil {
		return o.workflow.Steps + 1
	}
	return o.workflow.Steps
}

// outOfSteps fails a workflow whose step budget has run out (nil while steps remain): a retry
// policy without a delay, or a loop between states, ends there instead of running for ever. It
// goes to its ERROR state, or is FAILED where it is when its definition has none: no person can
// give it more steps but by retrying it.
func (e *Engine) outOfSteps(o *Outcome, def *workflow.Definition, state *workflow.State) *Outcome {
	if o.workflow.Steps < e.limits.Steps {
		return nil
	}
	o = e.failure(o, def, state, workflow.NonRetryable(&workflow.LimitError{What: "the step budget ran out; steps run", Size: o.workflow.Steps,
		Max: e.limits.Steps, Unit: "steps", Flag: "max-steps"}), persistence.TaskFailed)
	if o.completion.Status != persistence.StatusFailed {
		o.completion.Status, o.completion.NextActivation, o.completion.Finished = persistence.StatusFailed, nil, timePtr(persistence.Now())
	}
	return o
}
