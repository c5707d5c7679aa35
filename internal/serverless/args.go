package serverless

import (
	"encoding/base64"
	"encoding/json"
	"runtime/debug"
	"time"
)

// The runtime expression arguments, and which of them each kind of expression may use (the
// table "Runtime expression arguments" of the DSL). An argument an expression may not use is
// undefined there: an expression that names it is refused at deploy.
var (
	// argsWorkflowInput: the document's input.from, evaluated on the raw workflow input.
	argsWorkflowInput = []string{"$secrets", "$secret", "$workflow", "$runtime"}
	// argsWorkflowOutput: the document's output.as, evaluated on the last task's output.
	argsWorkflowOutput = []string{"$context", "$secrets", "$secret", "$workflow", "$runtime"}
	// argsTaskInput: a task's if and input.from, evaluated on its raw input.
	argsTaskInput = []string{"$context", "$secrets", "$secret", "$task", "$workflow", "$runtime"}
	// argsTask: a task's definition and its output.as; export.as adds $output.
	argsTask = append(append([]string{}, argsTaskInput...), "$input", "$authorization")
)

// RuntimeOptions describe the runtime to expressions: $runtime.version and $runtime.metadata
// ($runtime.name is "cairn").
type RuntimeOptions struct {
	// Version is cairn's version (DefaultRuntimeVersion when empty).
	Version string
	// Metadata is $runtime.metadata (an empty object when nil).
	Metadata map[string]any
}

// DefaultRuntimeVersion is the version of cairn's module this binary was built from, as the
// build recorded it ("dev" when it recorded none).
func DefaultRuntimeVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	const module = "github.com/cairnflow/cairn"
	v := info.Main.Version
	if info.Main.Path != module {
		v = ""
		for _, d := range info.Deps {
			if d.Path == module {
				v = d.Version
			}
		}
	}
	if v == "" || v == "(devel)" {
		return "dev"
	}
	return v
}

func (o RuntimeOptions) withDefaults() RuntimeOptions {
	if o.Version == "" {
		o.Version = DefaultRuntimeVersion()
	}
	if o.Metadata == nil {
		o.Metadata = map[string]any{}
	}
	return o
}

// lazyArg is an argument computed only for an expression that names it: the document or a
// copy of the secrets are not built for the expressions that never read them.
type lazyArg func() any

// dateTime is the spec's dateTimeDescriptor of t.
func dateTime(t time.Time) map[string]any {
	t = t.UTC()
	return map[string]any{
		"iso8601": t.Format(time.RFC3339Nano),
		"epoch":   map[string]any{"seconds": int(t.Unix()), "milliseconds": int(t.UnixMilli())},
	}
}

// workflowDesc is what $workflow says of the running workflow. A fork's branch is the same
// workflow as its parent: it gets its parent's (branchStart.Workflow).
type workflowDesc struct {
	ID        string    `json:"id"`
	Input     any       `json:"input"`
	StartedAt time.Time `json:"startedAt"`
}

// workflowDesc reads the running workflow's description once a step: its id, raw input, and
// the time it was started (first claimed; stored with the workflow, so the same on every step).
func (r *run) workflowDesc() *workflowDesc {
	if r.wf != nil || r.sc == nil {
		return r.wf
	}
	w := r.sc.Workflow()
	started := w.Created
	if w.Started != nil {
		started = *w.Started
	}
	d := &workflowDesc{ID: r.wfID, StartedAt: started.UTC().Truncate(time.Microsecond)}
	var input any
	if json.Unmarshal(r.sc.RawInput(), &input) == nil {
		d.Input = input
		if b := branchOf(&w, input); b != nil {
			if b.Workflow != nil {
				d = b.Workflow
			} else { // a branch started by an earlier version: its parent's transformed input
				d.Input = b.WorkflowInput
			}
		}
	}
	r.wf = d
	return d
}

// workflowArg is $workflow: id, definition (the document as parsed), input (raw) and startedAt.
func (r *run) workflowArg() any {
	d := r.workflowDesc()
	out := map[string]any{"id": r.wfID, "definition": copyJSON(r.prog.doc), "input": nil, "startedAt": dateTime(r.now)}
	if d != nil {
		out["id"], out["input"], out["startedAt"] = d.ID, copyJSON(d.Input), dateTime(d.StartedAt)
	}
	return out
}

// runtimeArg is $runtime.
func (p *program) runtimeArg() any {
	return map[string]any{"name": "cairn", "version": p.runtime.Version, "metadata": copyJSON(p.runtime.Metadata)}
}

// taskStart is when the task to run (or running) was entered: stored by the step that enters
// it, so each run of its step (a rerun after a crash too) reads the same time.
type taskStart struct {
	Path string    `json:"path"`
	At   time.Time `json:"at"`
}

// taskArg is $task for task t: output is its raw output (nil before it has one).
func (r *run) taskArg(t *task, output any) lazyArg {
	return func() any {
		return map[string]any{"name": t.name, "reference": t.path, "definition": copyJSON(t.def),
			"input": copyJSON(r.taskRawInput(t)), "output": copyJSON(output), "startedAt": dateTime(r.taskStarted(t))}
	}
}

// taskRawInput is a task's input before its input.from: a composite task's is kept with its
// frame; a task that runs has the data as its raw input until it completes.
func (r *run) taskRawInput(t *task) any {
	if f := r.frameOf(t); f != nil {
		if f.RawInput != nil {
			return f.RawInput
		}
		return f.Input
	}
	return r.st.Data
}

// taskStarted is when task t started: a composite task's frame keeps it, a task that runs has it
// stored by the step that entered it; a task being entered (its if, its input.from) starts now.
func (r *run) taskStarted(t *task) time.Time {
	if f := r.frameOf(t); f != nil && !f.Started.IsZero() {
		return f.Started
	}
	if s := r.st.TaskStarted; s != nil && s.Path == t.path {
		return s.At
	}
	return r.now
}

func (r *run) frameOf(t *task) *frame {
	if !composite(t.kind) {
		return nil
	}
	for i := len(r.st.Frames) - 1; i >= 0; i-- {
		if r.st.Frames[i].Path == t.path {
			return &r.st.Frames[i]
		}
	}
	for _, f := range []*frame{r.entering, r.left} {
		if f != nil && f.Path == t.path {
			return f
		}
	}
	return nil
}

// authorize sets $authorization for a call with authentication: its scheme and parameter. A
// basic parameter built from a secret is hidden wherever the step would store it, as the
// secrets are.
func (r *run) authorize(req *httpRequest) {
	r.auth, r.authRedact = nil, nil
	switch {
	case req.basic:
		param := basicParameter(req.user, req.password)
		r.auth = map[string]any{"scheme": "Basic", "parameter": param}
		if x := r.prog.redact; x.text(req.user) != req.user || x.text(req.password) != req.password {
			r.authRedact = newRedactor(map[string]any{"parameter": param})
		}
	case req.bearer != "":
		r.auth = map[string]any{"scheme": "Bearer", "parameter": req.bearer}
		if req.issued {
			r.authRedact = newRedactor(map[string]any{"parameter": req.bearer})
		}
	}
}

// usesArg reports whether an expression's source names an argument (a conservative test: a
// string that contains the name counts too).
func usesArg(src, name string) bool {
	for i := 0; i+len(name) <= len(src); i++ {
		if src[i:i+len(name)] != name {
			continue
		}
		end := i + len(name)
		if end == len(src) || !isIdentChar(src[end]) {
			return true
		}
	}
	return false
}

func isIdentChar(c byte) bool {
	return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

func basicParameter(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}

// branchWorkflow is the $workflow a fork's branches get: the running workflow's, its input
// without the secrets' values (it is stored with each branch).
func (r *run) branchWorkflow() *workflowDesc {
	d := r.workflowDesc()
	if d == nil {
		return nil
	}
	return &workflowDesc{ID: d.ID, Input: r.prog.redact.value(d.Input), StartedAt: d.StartedAt}
}
