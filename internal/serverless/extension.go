package serverless

import (
	"fmt"
	"strings"
)

// Extensions (use.extensions) run task lists around the tasks they extend. Each extension's
// `before` and `after` lists are compiled once, at their own pointers (/use/extensions/<i>/<name>/
// before/...), so their tasks are states like any other; at run time the flow makes an excursion
// into them from the task they extend, and comes back to it:
//
//   - entering a task (once its `if` held), the `when` of every extension of its type is evaluated
//     in the order the extensions are declared ($task is the task's). The `before` lists of those
//     that apply run one after the other, each on the task's input; then the task runs on that
//     same input. A task directly in a `before` list with `then: exit` bypasses the extended task:
//     the data it leaves is the task's raw output (its output.as and export.as apply), the later
//     `before` lists do not run, the `after` lists do.
//   - once the task completed (output.as, export.as), the `after` lists of the extensions that
//     applied run one after the other, each on the task's output; then the flow goes on from the
//     task (its `then`).
//
// The lists do not change the data: a `before` list's output is not the task's input, an `after`
// list's output is not the task's output (the task goes on with its own); only `then: exit` in a
// `before` list gives the task its output. What they export to $context stays. Inside them, $task
// describes the extended task. Extensions do not apply to their own tasks. A fault in them is the
// extended task's: a try around it catches it.

// kindExt is the owner of an extension's `before` or `after` list: the frame of the excursion.
const kindExt = "extension"

// maxExtensions bounds use.extensions.
const maxExtensions = 32

// extSpec is one compiled extension.
type extSpec struct {
	index  int
	name   string
	path   string // /use/extensions/<i>/<name>
	extend string
	when   *expr
	before *task // the owner of the before list (kindExt), nil without one
	after  *task
	// targets are the tasks of the document it may extend (its type), for the graph.
	targets []*task
}

// extendable are the values of extend, each with the task types it extends (by the key of the
// definition that makes the type, as strict.go finds it; composite is do and fork).
var extendable = map[string][]string{
	"call": {"call"}, "composite": {"do", "fork"}, "emit": {"emit"}, "for": {"for"}, "listen": {"listen"},
	"raise": {"raise"}, "run": {"run"}, "set": {"set"}, "switch": {"switch"}, "try": {"try"}, "wait": {"wait"},
}

// compileExtensions compiles use.extensions: each one's when, before and after.
func (c *compiler) compileExtensions(raw any) error {
	items, ok := raw.([]any)
	if !ok {
		return faultAt("/use/extensions", "use.extensions must be a list of extensions")
	}
	if len(items) > maxExtensions {
		return faultAt("/use/extensions", "a document may have at most %d extensions", maxExtensions)
	}
	for i, item := range items {
		m, ok := item.(map[string]any)
		if !ok || len(m) != 1 {
			return faultAt(fmt.Sprintf("/use/extensions/%d", i), "each extension must be an object with exactly one key, its name")
		}
		for name, body := range m {
			e := &extSpec{index: i, name: name, path: fmt.Sprintf("/use/extensions/%d/%s", i, escapePointer(name))}
			if name == "" || strings.ContainsRune(name, 0) || len(name) > 200 {
				return faultAt(e.path, "an extension's name must be 1 to 200 bytes without NUL characters")
			}
			def, ok := body.(map[string]any)
			if !ok {
				return faultAt(e.path, "extension %q must be an object", name)
			}
			e.extend, _ = def["extend"].(string)
			if _, known := extendable[e.extend]; !known && e.extend != "all" {
				if e.extend == "extension" {
					return faultAt(e.path+"/extend", "cairn does not extend the tasks of extensions: an extension around them would run again around its own tasks")
				}
				return faultAt(e.path+"/extend", "extend must be the type of task to extend (call, composite, emit, for, listen, raise, run, set, switch, try, wait) or all")
			}
			if v, ok := def["when"]; ok {
				s, isStr := v.(string)
				if !isStr {
					return faultAt(e.path+"/when", "when must be a runtime expression")
				}
				x, err := compileExpr(s, scope(argsTaskInput).with(), e.path+"/when")
				if err != nil {
					return err
				}
				e.when = x
			}
			for _, phase := range []string{"before", "after"} {
				v, ok := def[phase]
				if !ok {
					continue
				}
				owner := &task{name: name, path: e.path + "/" + phase, kind: kindExt, ext: e}
				body, err := c.compileList(v, owner.path, owner, scope(argsTask).with())
				if err != nil {
					return err
				}
				owner.body = body
				if phase == "before" {
					e.before = owner
				} else {
					e.after = owner
				}
			}
			c.prog.exts = append(c.prog.exts, e)
		}
	}
	return nil
}

// weave indexes the extensions' tasks and says which extensions may apply to each task of the
// document (t.exts, in the order declared). A listen task's foreach loop completes it: the loop
// gets the task's extensions, for its after lists.
func (p *program) weave() {
	if len(p.exts) == 0 {
		return
	}
	for _, e := range p.exts {
		for _, o := range []*task{e.before, e.after} {
			if o != nil {
				p.index(o)
			}
		}
	}
	var walk func(l *taskList)
	walk = func(l *taskList) {
		if l == nil {
			return
		}
		for _, t := range l.tasks {
			kind := definitionKind(t.def)
			for i, e := range p.exts {
				if e.extend == "all" || containsString(extendable[e.extend], kind) {
					t.exts = append(t.exts, i)
					e.targets = append(e.targets, t)
				}
			}
			walk(t.body)
			walk(catchList(t))
			if f := foreachOf(t); f != nil {
				f.exts = t.exts
				walk(f.body)
			}
		}
	}
	walk(p.root.body)
}

// definitionKind is a task's type, by the first key of its definition that makes one.
func definitionKind(def map[string]any) string {
	for _, k := range taskKindOrder {
		if _, ok := def[k]; ok {
			return k
		}
	}
	return ""
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// extensionOf is the extension whose list task t lies in (nil: a task of the document).
func extensionOf(t *task) *extSpec {
	if t.list == nil {
		return nil
	}
	return rootList(t).owner.ext
}

// completion is the task whose completion ends task t (a listen task's foreach loop, if any).
func completion(t *task) *task {
	if f := foreachOf(t); f != nil {
		return f
	}
	return t
}

// extend enters task t, whose `if` held, through the extensions that apply to it.
func (r *run) extend(t *task) target {
	var befores, afters []int
	for _, i := range t.exts {
		e := r.prog.exts[i]
		if e.when != nil {
			v, err := e.when.eval(r.ctx, r.st.Data, r.vars(t, r.st.Data, nil))
			if err != nil {
				return r.fault(t, expressionProblem(e.path+"/when", err))
			}
			if r.choice(2, func() int { return map[bool]int{true: 0, false: 1}[truthy(v)] }) == 1 {
				continue
			}
		}
		if e.before != nil {
			befores = append(befores, i)
		}
		if e.after != nil {
			afters = append(afters, i)
		}
	}
	key := completion(t).path
	delete(r.st.Extended, key)
	if len(afters) > 0 {
		if r.st.Extended == nil {
			r.st.Extended = map[string][]int{}
		}
		r.st.Extended[key] = afters
	}
	if len(r.st.Extended) == 0 {
		r.st.Extended = nil
	}
	return r.runBefore(t, befores)
}

// dropExtended forgets the after lists of the tasks under a path (a try that caught a fault in
// them): they did not complete.
func (r *run) dropExtended(prefix string) {
	for k := range r.st.Extended {
		if strings.HasPrefix(k, prefix) {
			delete(r.st.Extended, k)
		}
	}
	if len(r.st.Extended) == 0 {
		r.st.Extended = nil
	}
}

// runBefore runs the first of the before lists of t, or t itself when none is left.
func (r *run) runBefore(t *task, befores []int) target {
	if len(befores) == 0 {
		return r.enterTask(t)
	}
	e := r.prog.exts[befores[0]]
	r.push(frame{Path: e.before.path, Input: r.st.Data, Extends: t.path, Rest: befores[1:]})
	return r.enter(e.before.body.tasks[0])
}

// completeExtended goes on from task t, completed with flow directive then: through the after
// lists of the extensions that applied to it, if any.
func (r *run) completeExtended(t *task, input any, then string) target {
	afters := r.st.Extended[t.path]
	if len(afters) == 0 {
		return r.next(t, then)
	}
	delete(r.st.Extended, t.path)
	if len(r.st.Extended) == 0 {
		r.st.Extended = nil
	}
	return r.runAfter(t, input, afters, then)
}

// runAfter runs the first of the after lists of t, on its output, or goes on from t.
func (r *run) runAfter(t *task, input any, afters []int, then string) target {
	if len(afters) == 0 {
		return r.next(t, then)
	}
	e := r.prog.exts[afters[0]]
	r.push(frame{Path: e.after.path, Input: r.st.Data, RawInput: input, Extends: t.path, Rest: afters[1:], Then: then})
	return r.enter(e.after.body.tasks[0])
}

// leaveExtension leaves an extension's list l, back to the task it extends; exit says a task of a
// before list bypasses the task (then: exit), with the data it leaves as the task's output.
func (r *run) leaveExtension(l *taskList, exit bool) target {
	out := r.st.Data
	x := r.pop()
	t := r.prog.byPath[x.Extends]
	if t == nil || x.Path != l.owner.path {
		return target{fault: &Problem{Type: errTypeRuntime, Status: 500, Title: "Lost Extension",
			Detail: "the task an extension runs around is not known to this version", Instance: l.owner.path}}
	}
	r.st.Data = x.Input
	if l.owner == l.owner.ext.before {
		if exit {
			c := completion(t)
			return r.complete(c, x.Input, out, c.then)
		}
		return r.runBefore(t, x.Rest)
	}
	return r.runAfter(t, x.RawInput, x.Rest, x.Then)
}

// nextInExtension is where a flow directive of task t, in an extension's list, goes when it is not
// as for any task: then: exit directly in a before list, and then: end (the workflow's, or the
// fork branch's). ok is false when the directive goes where afterThen says.
func (r *run) nextInExtension(t *task, then string) (target, bool) {
	e := extensionOf(t)
	switch {
	case e == nil:
		return target{}, false
	case then == thenEnd && r.st.Branch != nil:
		return r.endBranch(), true
	case then == thenEnd:
		r.st.Frames = r.st.Frames[:1]
		return r.exitList(r.prog.root.body), true
	case then == thenExit && t.list.owner == e.before:
		return r.leaveExtension(t.list, true), true
	}
	return target{}, false
}

// extensionFrame is the frame of the excursion into an extension that task t runs in (nil: t is
// not an extension's task, or the frame is lost).
func (r *run) extensionFrame(t *task) *frame {
	e := extensionOf(t)
	if e == nil {
		return nil
	}
	for i := len(r.st.Frames) - 1; i >= 0; i-- {
		if p := r.st.Frames[i].Path; p == rootList(t).owner.path {
			return &r.st.Frames[i]
		}
	}
	return nil
}

// taskArgOf is $task for task t: in an extension's task, the extended task's: its input, and in
// an after list its output.
func (r *run) taskArgOf(t *task, output any) lazyArg {
	x := r.extensionFrame(t)
	if x == nil {
		return r.taskArg(t, output)
	}
	ext := r.prog.byPath[x.Extends]
	if ext == nil {
		return r.taskArg(t, output)
	}
	in, out := x.Input, any(nil)
	if o := r.prog.byPath[x.Path]; o != nil && o.ext != nil && o == o.ext.after {
		in, out = x.RawInput, x.Input
	}
	return func() any {
		return map[string]any{"name": ext.name, "reference": ext.path, "definition": copyJSON(ext.def),
			"input": copyJSON(in), "output": copyJSON(out), "startedAt": dateTime(r.now)}
	}
}

// extensionBase is the index of the frame of the excursion that task t runs in (0 for a task of
// the document; -1 when the frame is missing: the workflow was moved into an extension's task).
func (r *run) extensionBase(t *task) int {
	x := r.extensionFrame(t)
	if x == nil {
		if extensionOf(t) != nil {
			return -1
		}
		return 0
	}
	for i := range r.st.Frames {
		if &r.st.Frames[i] == x {
			return i
		}
	}
	return -1
}

// lostExtension is the fault of an extension's task run without the task it extends.
func lostExtension(t *task) *Problem {
	return &Problem{Type: errTypeRuntime, Status: 500, Title: "Lost Extension",
		Detail: "an extension's task runs only around the task it extends", Instance: t.path}
}

// The moves into and out of extensions, for the graph of the states (explore.go): every
// extension of a task may apply or not, and a before list may bypass the task.

// extend mirrors run.extend.
func (g *graph) extend(t *task) map[string]bool {
	return g.cached("extend:"+t.path, func(add func(map[string]bool)) {
		for _, i := range t.exts {
			if g.p.exts[i].when != nil {
				add(g.fault(t))
			}
		}
		add(g.beforeFrom(t, -1))
	})
}

// beforeFrom is where the flow may go into task t from its extensions' before lists after the
// one of extension at (-1: from the first).
func (g *graph) beforeFrom(t *task, at int) map[string]bool {
	set := map[string]bool{}
	for _, i := range t.exts {
		if b := g.p.exts[i].before; i > at && b != nil {
			for k := range g.enter(b.body.tasks[0]) {
				set[k] = true
			}
		}
	}
	for k := range g.enterTask(t) {
		set[k] = true
	}
	return set
}

// leaveExtension mirrors run.leaveExtension, for every task the extension may run around.
func (g *graph) leaveExtension(l *taskList, exit bool) map[string]bool {
	return g.cached(fmt.Sprintf("leaveExt:%s\x00%v", l.path, exit), func(add func(map[string]bool)) {
		add(one(stateFault))
		e := l.owner.ext
		for _, t := range e.targets {
			c := completion(t)
			switch {
			case l.owner == e.before && exit:
				add(g.complete(c, c.then))
			case l.owner == e.before:
				add(g.beforeFrom(t, e.index))
			default:
				for _, i := range t.exts {
					if a := g.p.exts[i].after; i > e.index && a != nil {
						add(g.enter(a.body.tasks[0]))
					}
				}
				add(g.next(c, c.then))
				for _, cs := range c.cases {
					add(g.next(c, cs.then))
				}
			}
		}
	})
}

// nextInExtension mirrors run.nextInExtension.
func (g *graph) nextInExtension(t *task, then string) (map[string]bool, bool) {
	e := extensionOf(t)
	switch {
	case e == nil:
		return nil, false
	case then == thenEnd:
		set := map[string]bool{stateEnd: true}
		for k := range g.exitList(g.p.root.body) {
			set[k] = true
		}
		return set, true
	case then == thenExit && t.list.owner == e.before:
		return g.leaveExtension(t.list, true), true
	}
	return nil, false
}
