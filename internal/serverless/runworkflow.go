package serverless

import (
	"encoding/json"
	"fmt"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// awaitSuffix names the WAIT state in which a `run: workflow` task waits for its child.
const awaitSuffix = "/await"

// runWorkflow is a compiled `run: workflow`: a child workflow of a deployed type.
type runWorkflow struct {
	typ     string // <namespace>.<name>
	version string // document.version of the version to run ("" for the newest)
	input   *template
	await   bool
}

func (c *compiler) compileRunWorkflow(t *task, run map[string]any, sc scope) error {
	ptr := t.path + "/run/workflow"
	w, _ := run["workflow"].(map[string]any)
	ns, _ := w["namespace"].(string)
	name, _ := w["name"].(string)
	if ns == "" || name == "" {
		return faultAt(ptr, "run: workflow needs the namespace and name of a deployed definition")
	}
	rw := &runWorkflow{typ: ns + "." + name, await: true}
	rw.version, _ = w["version"].(string)
	// A document that runs itself starts a workflow per step for ever (9,172 in 30 s).
	if rw.typ == c.prog.typ && (rw.version == "" || rw.version == c.prog.label) {
		return faultAt(t.path, "task %s runs its own workflow %s (version %s): a workflow may not run itself", t.name, rw.typ, c.prog.label)
	}
	if in, ok := w["input"]; ok {
		var err error
		if rw.input, err = compileTemplate(in, sc, ptr+"/input"); err != nil {
			return err
		}
	}
	if a, ok := run["await"].(bool); ok {
		rw.await = a
	}
	t.kind, t.run = kindRun, rw
	return nil
}

// startChild starts the child of a `run: workflow` task (created when the step completes).
func (r *run) startChild(sc workflow.StepContext, t *task, in any) *Problem {
	rw := t.run
	fail := func(format string, args ...any) *Problem {
		return &Problem{Type: errTypeRuntime, Status: 400, Title: "Cannot Run Workflow", Detail: fmt.Sprintf(format, args...), Instance: t.path}
	}
	var input any = map[string]any{}
	if rw.input != nil {
		v, p := r.evalTpl(t, rw.input, in, nil)
		if p != nil {
			return p
		}
		input = v
	}
	if _, ok := input.(map[string]any); !ok {
		return fail("the input of workflow %s must be an object", rw.typ)
	}
	// A pinned version runs whichever stored version has that label, however many came after it.
	version := 0
	if rw.version != "" {
		row, err := sc.Reader().DeployedVersion(r.ctx, rw.typ, rw.version)
		if err != nil {
			return fail("no deployed definition %s of version %q: %v", rw.typ, rw.version, err)
		}
		version = row.Version
	} else if _, err := sc.Reader().Definition(r.ctx, rw.typ, 0); err != nil {
		return fail("no deployed definition %s: %v", rw.typ, err)
	}
	b, err := json.Marshal(r.prog.redact.value(input))
	if err != nil {
		return fail("%v", err)
	}
	sc.StartChild(workflow.ChildRequest{Type: rw.typ, Input: b, Version: version})
	return nil
}

// childOutcome reads the newest child of the workflow once every child ended: its output, or
// its fault.
func (r *run) childOutcome(sc workflow.StepContext, t *task) (any, *Problem) {
	children, err := sc.Reader().Children(r.ctx, sc.WorkflowID(), 1)
	if err != nil || len(children) == 0 {
		return nil, &Problem{Type: errTypeRuntime, Status: 500, Title: "Child Workflow Lost", Detail: fmt.Sprint(err), Instance: t.path}
	}
	child := children[0]
	if child.Status != persistence.StatusFinished {
		p := ProblemOf(child)
		if p == nil {
			p = &Problem{Type: errTypeRuntime, Status: 500, Title: "Child Workflow " + string(child.Status)}
			if child.LastError != nil {
				p.Detail = *child.LastError
			}
		}
		p.Instance = t.path
		return nil, p
	}
	var out any
	if raw := workflow.OutputOf(child); len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, &Problem{Type: errTypeRuntime, Status: 500, Title: "Invalid Child Output", Detail: err.Error(), Instance: t.path}
		}
	}
	return out, nil
}
