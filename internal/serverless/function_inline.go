package serverless

import (
	"fmt"

	"github.com/cairnflow/cairn/workflow"
)

// compileInlineFunction compiles a call of a function the document defines (use.functions): the
// calling task becomes a `do` of the function's task, preceded, when the call has `with`, by a
// task that sets the function's input to it (the state <task>/with). The function's task is
// compiled at each call, as <task>/call, in the scope of a document's tasks (a function sees
// none of its caller's variables); its input.schema checks the arguments.
func (c *compiler) compileInlineFunction(t *task, def map[string]any, name string, fdef any, sc scope) error {
	fptr := "/use/functions/" + escapePointer(name)
	fm, ok := fdef.(map[string]any)
	if !ok {
		return faultAt(fptr, "function %q must be a task definition", name)
	}
	if c.calling == nil {
		c.calling = map[string]bool{}
	}
	if c.calling[name] {
		return faultAt(t.path+"/call", "function %q calls itself: cairn refuses recursive functions", name)
	}
	c.calling[name] = true
	defer delete(c.calling, name)
	// Its faults are found at the function's own pointer first, once.
	if c.checked == nil {
		c.checked = map[string]bool{}
	}
	if !c.checked[name] {
		c.checked[name] = true
		tasks := c.tasks
		_, err := c.compileTask(name, fptr, fm, scope(argsTask).with())
		c.tasks = tasks
		if err != nil {
			return err
		}
	}
	if c.depth++; c.depth > MaxDepth {
		return faultAt(t.path+"/call", "task lists (and the functions they call) may nest at most %d deep", MaxDepth)
	}
	defer func() { c.depth-- }()
	t.kind = kindDo
	l := &taskList{path: t.path + "/call", owner: t}
	if with, ok := def["with"]; ok {
		wt := &task{name: "with", path: t.path + "/with", kind: kindSet, def: map[string]any{"set": with}}
		var err error
		if wt.set, err = compileValueOrExpr(with, sc, t.path+"/with"); err != nil {
			return err
		}
		l.tasks = append(l.tasks, wt)
	}
	fpath := t.path + "/call"
	if len(fpath)+len(awaitSuffix) > workflow.MaxKeyLength {
		return faultAt(t.path, "a task's path (its state's name) may have at most %d bytes", workflow.MaxKeyLength-len(awaitSuffix))
	}
	if c.tasks++; c.tasks > MaxTasks {
		return faultAt(t.path, "a document may have at most %d tasks (a function's count at each call)", MaxTasks)
	}
	ft, err := c.compileTask(name, fpath, fm, scope(argsTask).with())
	if err != nil {
		return fmt.Errorf("function %q called at %s: %w", name, t.path, err)
	}
	if ft.then != "" && ft.then != thenContinue {
		return faultAt(fptr+"/then", "a function's then is not used: the calling task's is")
	}
	l.tasks = append(l.tasks, ft)
	for i, x := range l.tasks {
		x.list, x.index = l, i
	}
	t.body = l
	return nil
}
