package serverless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairnflow/cairn/workflow"
)

// kindFunction is a `call` of a function the document does not define: a Go Function registered
// on the node runs it, or, where none is, remote workers serve it (workflow.StepContext.CallRemote).
const kindFunction = "function"

// Function serves a called function in the node's own process: it gets the call's arguments
// (`with`, or the task's input without one) and returns the task's raw output. An error that is a
// *ProblemError faults the task with its Problem; any other faults it as a runtime error.
type Function func(ctx context.Context, args any) (any, error)

// ProblemError is a Function's error that says which Problem the task faults with.
type ProblemError struct{ Problem Problem }

// Error is the problem's title and detail.
func (e *ProblemError) Error() string { return e.Problem.Title + ": " + e.Problem.Detail }

// builtInCalls are the call types the specification defines: never a function's name.
var builtInCalls = map[string]bool{"http": true, "grpc": true, "openapi": true, "asyncapi": true}

// functionCall is a compiled call of a function by name.
type functionCall struct {
	name string
	with *template // nil: the task's input is the arguments
	// catalog is where a cataloged function's definition is fetched (catalog.go).
	catalog *catalogRef
}

// isFunctionCall reports whether a task's `call` names a function: one the document defines
// (use.functions), a cataloged one (name:version@catalog, or the URI of its function.yaml), or
// else one served by a Go Function or by remote workers.
func (c *compiler) isFunctionCall(v any) bool {
	name, ok := v.(string)
	return ok && name != "" && !builtInCalls[name]
}

func (c *compiler) compileFunctionCall(t *task, def map[string]any, sc scope) error {
	name := def["call"].(string)
	if fdef, defined := c.functions[name]; defined {
		return c.compileInlineFunction(t, def, name, fdef, sc)
	}
	if isCatalogRef(name) {
		return c.compileCatalogCall(t, def, name, sc)
	}
	t.kind = kindFunction
	fc := &functionCall{name: name}
	if err := workflow.CheckString("call", fc.name, workflow.MaxKeyLength); err != nil {
		return faultAt(t.path+"/call", "the function's name is not valid: %v", err)
	}
	t.function = fc
	return fc.compileWith(def, sc, t.path)
}

// compileWith compiles the call's `with`, its arguments (none: the task's input is).
func (fc *functionCall) compileWith(def map[string]any, sc scope, ptr string) error {
	with, ok := def["with"]
	if !ok {
		return nil
	}
	x, err := compileValueOrExpr(with, sc, ptr+"/with")
	fc.with = x
	return err
}

// callFunction runs a function call: with the node's Go Function when one is registered, else as
// a remote task. A remote task not ended yet is workflow.ErrRemotePending, which the step returns
// (the workflow waits for the task); other step errors are returned the same way, for the engine's
// retry policy (the task's Problems are returned as such).
func (r *run) callFunction(sc workflow.StepContext, t *task, in any) (any, *Problem, error) {
	args := in
	if t.function.with != nil {
		v, p := r.evalTpl(t, t.function.with, in, nil)
		if p != nil {
			return nil, p, nil
		}
		args = v
	}
	if t.function.catalog != nil {
		return r.callCataloged(sc, t, args)
	}
	if f, ok := r.prog.functions[t.function.name]; ok {
		out, err := f(sc, args)
		var pe *ProblemError
		switch {
		case err == nil:
			return out, nil, nil
		case errors.As(err, &pe):
			p := pe.Problem
			if p.Instance == "" {
				p.Instance = t.path
			}
			return nil, &p, nil
		default:
			return nil, &Problem{Type: errTypeRuntime, Status: 500, Title: "Function Failed", Detail: err.Error(), Instance: t.path}, nil
		}
	}
	// A remote task's arguments are stored with it: a worker keeps its own credentials.
	raw, err := sc.CallRemote(t.function.name, r.prog.redact.value(args))
	var re *workflow.RemoteError
	switch {
	case errors.As(err, &re):
		return nil, &Problem{Type: re.Type, Status: statusOr(re.Status, 500), Title: re.Title, Detail: re.Detail, Instance: t.path}, nil
	case err != nil:
		return nil, nil, err
	}
	var out any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, &Problem{Type: errTypeRuntime, Status: 502, Title: "Bad Function Output", Detail: fmt.Sprintf("the output of %s is not JSON: %v", t.function.name, err), Instance: t.path}, nil
		}
	}
	return out, nil, nil
}

func statusOr(status, def int) int {
	if status == 0 {
		return def
	}
	return status
}
