package main

import "github.com/cairnflow/cairn/workflow"

// workflowLimits are the bounds on what one workflow may store and run that cairn serve takes as
// flags (README, "Limits"): without them one workflow could fill the disk or keep workers busy.
type workflowLimits struct {
	maxValueBytes      int
	maxVariablesBytes  int
	maxSteps           int
	maxChildDepth      int
	maxChildrenPerStep int
	maxChildren        int
	maxTreeWorkflows   int
}

func (l *workflowLimits) register(fs *flagSet) {
	d := workflow.DefaultLimits
	fs.IntVar(&l.maxValueBytes, "max-value-bytes", d.ValueBytes, "largest JSON value in bytes a workflow stores: its input, one variable, a step's output, a signal's payload, a form's data, a child's input (the API refuses a larger one; a step writing one fails)")
	fs.IntVar(&l.maxVariablesBytes, "max-variables-bytes", d.VariablesBytes, "largest a workflow's variables may grow, in bytes of JSON, all together; also bounds the inputs of the children one step starts, together")
	fs.IntVar(&l.maxSteps, "max-steps", d.Steps, "steps (attempts) one workflow may run; the next fails it (FAILED), and a manual retry gives it as many again")
	fs.IntVar(&l.maxChildDepth, "max-child-depth", d.ChildDepth, "how deep a chain of child workflows may go; a step starting a deeper child fails")
	fs.IntVar(&l.maxChildrenPerStep, "max-children-per-step", d.ChildrenPerStep, "most child workflows one step may start")
	fs.IntVar(&l.maxChildren, "max-children", d.Children, "most child workflows one workflow may start in all its steps")
	fs.IntVar(&l.maxTreeWorkflows, "max-tree-workflows", d.TreeWorkflows, "most workflows below one top-level workflow, at every depth (children, their children, ...); a step that would start more fails")
}

// check refuses limits that are not positive.
func (l *workflowLimits) check() error {
	for name, v := range map[string]int{"max-value-bytes": l.maxValueBytes, "max-variables-bytes": l.maxVariablesBytes, "max-steps": l.maxSteps,
		"max-child-depth": l.maxChildDepth, "max-children-per-step": l.maxChildrenPerStep, "max-children": l.maxChildren, "max-tree-workflows": l.maxTreeWorkflows} {
		if v <= 0 {
			return usagef("--%s must be positive, not %d", name, v)
		}
	}
	return nil
}

// options is the engine's view of the limits.
func (l *workflowLimits) options() workflow.Limits {
	return workflow.Limits{ValueBytes: l.maxValueBytes, VariablesBytes: l.maxVariablesBytes, Steps: l.maxSteps, ChildDepth: l.maxChildDepth,
		ChildrenPerStep: l.maxChildrenPerStep, Children: l.maxChildren, TreeWorkflows: l.maxTreeWorkflows}
}
