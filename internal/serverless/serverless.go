// Package serverless compiles CNCF Serverless Workflow 1.0 documents into cairn definitions and
// runs them durably. A document is parsed and schema-validated by the specification's Go SDK, its
// jq expressions are compiled at deploy time (gojq), and its flow is checked (every `then` names a
// task, every reference is defined). Each task that does work (set, switch, raise, wait, listen,
// emit, call, run, fork) becomes a state named by its JSON pointer and runs as one durable step;
// composite tasks (do, for, try) are entered and left by those steps, and a fork's branches run
// as child workflows. The task's data lives in the workflow's
// variables, so history, retries, pause, cancel and recovery treat these workflows like any other.
package serverless

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/go-playground/validator/v10"
	"github.com/serverlessworkflow/sdk-go/v3/parser"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/workflow"
)

// Options configures what compiled documents may do.
type Options struct {
	// HTTP bounds `call: http` tasks.
	HTTP HTTPOptions
	// Secrets are what expressions read as $secret (credentials for authentication, say). Their
	// string values are never stored: wherever a workflow would store one, it reads [secret].
	Secrets map[string]any
	// Functions serve `call`s of functions a document does not define, by name, in this process;
	// a call of a name not here becomes a remote task for workers (see workflow.StepContext.CallRemote).
	Functions map[string]Function
	// Expressions bound the time and memory of each expression's evaluation.
	Expressions ExpressionOptions
	// Run says which processes run: shell and run: script tasks may start, and bounds them.
	Run RunOptions
	// Runtime is what expressions read as $runtime.
	Runtime RuntimeOptions
	// GRPC bounds call: grpc tasks (with HTTP: hosts, timeout, sizes).
	GRPC GRPCOptions
	// AsyncAPI bounds `call: asyncapi` tasks.
	AsyncAPI AsyncAPIOptions
}

// Compiler is cairn's workflow.DocumentCompiler for Serverless Workflow documents.
type Compiler struct {
	http    *httpRunner
	secrets map[string]any
	redact  *redactor
	// functions are the node's Go Functions, by name.
	functions map[string]Function
	exprs     ExpressionOptions
	run       RunOptions
	runtime   RuntimeOptions
	grpc      GRPCOptions
	async     AsyncAPIOptions
}

var _ workflow.DocumentCompiler = (*Compiler)(nil)

// NewCompiler returns a compiler whose documents run within opts.
func NewCompiler(opts Options) *Compiler {
	secrets := opts.Secrets
	if secrets == nil {
		secrets = map[string]any{}
	}
	return &Compiler{http: newHTTPRunner(opts.HTTP), secrets: secrets, redact: newRedactor(secrets), functions: opts.Functions, exprs: opts.Expressions.withDefaults(),
		run: opts.Run.withDefaults(), runtime: opts.Runtime.withDefaults(), grpc: opts.GRPC, async: opts.AsyncAPI.withDefaults()}
}

// Install makes an engine deploy and run Serverless Workflow documents.
func Install(e *engine.Engine, opts Options) {
	e.SetCompiler(NewCompiler(opts))
}

// Compile parses, validates and compiles a document (YAML or JSON).
func (c *Compiler) Compile(source []byte) (*workflow.CompiledDocument, error) {
	p, canonical, err := compile(source, c.run)
	if err != nil {
		return nil, err
	}
	p.http, p.secrets, p.redact, p.functions = c.http, c.secrets, c.redact, c.functions
	p.exprs, p.runtime, p.grpc, p.async = c.exprs, c.runtime, c.grpc, c.async
	return &workflow.CompiledDocument{Definition: p.definition(), Canonical: canonical, Label: p.label, Schedule: p.sched.cron}, nil
}

// compile turns a source into its program.
func compile(source []byte, run RunOptions) (*program, []byte, error) {
	if err := checkBooleanKeys(source); err != nil {
		return nil, nil, err
	}
	doc, canonical, err := decodeSource(source)
	if err != nil {
		return nil, nil, err
	}
	c := &compiler{prog: &program{byPath: map[string]*task{}, run: run}, run: run}
	if err := c.compileDocument(doc); err != nil {
		return nil, nil, err
	}
	if err := checkKeys(doc, documentShape, ""); err != nil {
		return nil, nil, err
	}
	if _, err := parser.FromJSONSource(forSDK(doc, canonical)); err != nil {
		return nil, nil, sdkFault(doc, err)
	}
	c.prog.index(c.prog.root)
	c.prog.weave()
	c.prog.usesTask = usesArg(string(canonical), "$task")
	c.prog.runtime = RuntimeOptions{}.withDefaults()
	return c.prog, canonical, nil
}

// forSDK is the document as the SDK validates it: its timeouts named from use.timeouts inlined,
// since the SDK (v3.2.0) refuses a timeout given by name (its rule names a field that does not
// exist), and the runtime expressions the DSL allows where the SDK's types want an object (a
// set, an HTTP call's headers and query: sdkObjects) put in an object. The names and the
// expressions were checked by the compiler; the rest is still validated.
func forSDK(doc map[string]any, canonical []byte) []byte {
	use, _ := doc["use"].(map[string]any)
	named, _ := use["timeouts"].(map[string]any)
	var copyOf map[string]any
	if json.Unmarshal(canonical, &copyOf) != nil {
		return canonical
	}
	var inline func(v any)
	inline = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			sdkObjects(x)
			for k, c := range x {
				if ref, ok := c.(string); ok && k == "timeout" && named[ref] != nil {
					x[k] = named[ref]
					continue
				}
				inline(c)
			}
		case []any:
			for _, c := range x {
				inline(c)
			}
		}
	}
	keep := copyOf["use"]
	delete(copyOf, "use")
	inline(copyOf)
	if u, ok := keep.(map[string]any); ok {
		inline(u["extensions"]) // the extensions' tasks are tasks like the document's
	}
	copyOf["use"] = keep
	out, err := json.Marshal(copyOf)
	if err != nil {
		return canonical
	}
	return out
}

// sdkObjects puts in an object the runtime expressions of a task (def) that the SDK reads as
// objects only: `set: '${ ... }'`, and an HTTP call's `headers` and `query`.
func sdkObjects(def map[string]any) {
	if s, ok := def["set"].(string); ok {
		def["set"] = map[string]any{"expression": s}
	}
	if def["call"] != "http" {
		return
	}
	if with, ok := def["with"].(map[string]any); ok {
		for _, k := range []string{"headers", "query"} {
			if s, ok := with[k].(string); ok {
				with[k] = map[string]any{"expression": s}
			}
		}
	}
}

// sdkFault turns the SDK's validation error into a refusal at the JSON pointer of the fault: its
// field path (Workflow.Do[1].Task.Wait...) is walked through the document, the deepest part found.
func sdkFault(doc map[string]any, err error) error {
	var ves validator.ValidationErrors
	if errors.As(err, &ves) && len(ves) > 0 {
		fe := ves[0]
		return faultAt(pointerIn(doc, strings.Split(fe.Namespace(), ".")[1:]), "fails the schema's %q rule (value %v)", fe.Tag(), fe.Value())
	}
	var se *json.UnmarshalTypeError
	if errors.As(err, &se) {
		return faultAt(pointerIn(doc, strings.Split(se.Field, ".")), "must be %s, not %s", se.Type, se.Value)
	}
	return faultAt("/", "the document does not follow the Serverless Workflow schema: %v", err)
}

// pointerIn follows Go field names (Do[1], Task, Wait) through a decoded document and returns the
// JSON pointer of the deepest value they reach.
func pointerIn(doc map[string]any, fields []string) string {
	var cur any = doc
	var ptr []string
	step := func(key string) bool {
		switch c := cur.(type) {
		case map[string]any:
			for k, v := range c {
				if strings.EqualFold(k, key) {
					cur, ptr = v, append(ptr, escapePointer(k))
					return true
				}
			}
			if key == "task" && len(c) == 1 { // a task list's item: the task's name
				for k, v := range c {
					cur, ptr = v, append(ptr, escapePointer(k))
				}
				return true
			}
		case []any:
			if i, err := strconv.Atoi(key); err == nil && i >= 0 && i < len(c) {
				cur, ptr = c[i], append(ptr, key)
				return true
			}
		}
		return false
	}
	for _, f := range fields {
		name, idx, hasIdx := strings.Cut(f, "[")
		if name != "" {
			step(strings.ToLower(name))
		}
		if hasIdx {
			step(strings.TrimSuffix(idx, "]"))
		}
	}
	return "/" + strings.Join(ptr, "/")
}

// index lists a program's tasks by path and its tasks to run in document order.
func (p *program) index(t *task) {
	p.byPath[t.path] = t
	if !composite(t.kind) {
		p.leaves = append(p.leaves, t)
	}
	if f := foreachOf(t); f != nil {
		p.index(f)
	}
	for _, l := range []*taskList{t.body, catchList(t)} {
		if l == nil {
			continue
		}
		for _, c := range l.tasks {
			p.index(c)
		}
	}
}

func catchList(t *task) *taskList {
	if t.catch == nil {
		return nil
	}
	return t.catch.do
}

// definition builds the state machine: a start state, one state per task to run, an end and a
// fault state. Each state lists where its step may go, found by exploring every choice.
func (p *program) definition() workflow.Definition {
	d := workflow.Definition{Type: p.typ, Description: p.title, FlowControl: p.flow}
	if p.sched.on != nil {
		d.StartOn, d.StartEvent = p.sched.types, p.startEvent
	}
	next := p.successors()
	// A document whose every path faults still validates: the start lists the end too.
	startNext := append(next[""], stateEnd)
	d.States = append(d.States, workflow.State{Name: stateStart, Kind: workflow.Start, Handler: p.handler(nil), Next: dedupe(startNext),
		Description: "the workflow's input, then its first task"})
	for _, t := range p.leaves {
		s := workflow.State{Name: t.path, Kind: workflow.Normal, Handler: p.handler(t), Next: next[t.path], Description: t.kind + " " + t.name}
		if t.kind == kindListen {
			s.Kind = workflow.Wait
			s.WaitFor = t.listenSpec.waitFor()
		}
		// A task's faults are Problems handled by try/catch; the engine's own retries are only
		// for a step that could not run at all (a crash, a lost database).
		s.Retry = &workflow.RetryPolicy{MaxAttempts: 3, MinBackoff: defaultBackoff, MaxBackoff: 10 * defaultBackoff}
		if t.kind == kindProcess {
			s.Timeout = p.run.Timeout + processStepMargin
		}
		if t.kind == kindAsyncAPI {
			s.Timeout = p.async.withDefaults().MaxSubscribeTime + asyncStepMargin
		}
		d.States = append(d.States, s)
		if t.kind == kindFork || (t.kind == kindRun && t.run.await) {
			d.States = append(d.States, workflow.State{Name: t.path + awaitSuffix, Kind: workflow.Wait, Handler: p.awaitHandler(t),
				WaitFor: &workflow.WaitFor{Children: true, DeadlineVariable: varDeadline}, Next: next[t.path+awaitSuffix], Retry: s.Retry,
				Description: "waits for the child workflows of " + t.kind + " " + t.name})
		}
	}
	d.States = append(d.States,
		workflow.State{Name: stateEnd, Kind: workflow.End, Description: "the workflow completed"},
		workflow.State{Name: stateFault, Kind: workflow.ErrorKind, Description: "the workflow faulted (lastError holds the Problem Details)"})
	return d
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	out := in[:0]
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
