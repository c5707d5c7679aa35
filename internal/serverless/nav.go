package serverless

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/cairnflow/cairn/workflow"
)

// maxHops bounds how many tasks one step may enter or leave before it reaches a task to run: a
// flow of skipped tasks that loops forever faults instead of spinning.
const maxHops = 10000

// target is where a step goes: a task to run next (after a delay, for a retry), the workflow's
// end, or a fault.
type target struct {
	leaf  *task
	await bool // the leaf is a run: workflow task that started its child and waits for it
	again bool // the leaf is the listen task that runs: it waits on (its deadline stays)
	delay time.Duration
	end   bool
	fault *Problem
	// stepErr ends the step with an error (a remote task not ended yet: the workflow waits).
	stepErr error
	// caught is the Problem a try around the task caught on the way: the step's attempt failed,
	// though the workflow goes on.
	caught *Problem
}

// frame is the running state of one composite task around the current one (the root first).
// Its input and a for's items are stored apart from it, once (see frames.go): a step that only
// moves on (a loop's next item) stores what it changed, not the whole collection again.
type frame struct {
	Path  string `json:"path"`
	Input any    `json:"-"`
	// RawInput is a composite task's input before its input.from, kept for $task.input when the
	// document reads $task and the task has an input.from.
	RawInput any   `json:"-"`
	Items    []any `json:"-"`
	// Index, Count and Item are a for's position: the current item, of Count.
	Index    int       `json:"index,omitempty"`
	Count    int       `json:"count,omitempty"`
	Item     any       `json:"item,omitempty"`
	Retries  int       `json:"retries,omitempty"`
	Started  time.Time `json:"started,omitzero"`
	Catching bool      `json:"catching,omitempty"`
	Error    any       `json:"error,omitempty"`
	// Deadline is when the composite task (or the workflow) times out.
	Deadline *time.Time `json:"deadline,omitempty"`
	// Extends, Rest and Then are an extension's excursion (extension.go): the task it runs around,
	// the extensions whose lists run after this one, and the flow directive to follow afterwards.
	Extends string `json:"extends,omitempty"`
	Rest    []int  `json:"rest,omitempty"`
	Then    string `json:"then,omitempty"`
	// entered says the frame was entered by this step: its input and items are to be stored.
	entered bool
}

// data is what a workflow of a deployed definition keeps in its variables between steps.
type data struct {
	Input     any        `json:"input"`   // the workflow's input, after input.from
	Data      any        `json:"data"`    // the output of the last task: the input of the next
	Context   any        `json:"context"` // $context
	Frames    []frame    `json:"frames"`
	Output    any        `json:"output,omitempty"`
	WaitUntil *time.Time `json:"waitUntil,omitempty"`
	Branch    *branchRef `json:"branch,omitempty"` // a child that runs one branch of its parent's fork
	// TaskDeadline is when the task to run (or running) times out.
	TaskDeadline *time.Time `json:"taskDeadline,omitempty"`
	// Listen is the progress of the listen task that waits.
	Listen *listenState `json:"listen,omitempty"`
	// TaskStarted is when the task to run (or running) started ($task.startedAt).
	TaskStarted *taskStart `json:"taskStarted,omitempty"`
	// Extended are the extensions whose after lists run once a task completes, by its path.
	Extended map[string][]int `json:"extended,omitempty"`
}

// run moves through a program from one task to the next, evaluating as it goes. The moves are
// mirrored by the graph (explore.go) that lists each state's possible next states: a change here
// needs its twin there.
type run struct {
	ctx  context.Context
	prog *program
	st   *data
	now  time.Time
	wfID string
	hops int
	sc   workflow.StepContext // nil in the graph's exploration
	wf   *workflowDesc        // $workflow's, read once a step
	// auth is $authorization: the authentication of the call that runs, resolved; authRedact
	// hides its parameter when it was built from secrets (basic's base64 of user:password).
	auth       any
	authRedact *redactor
	// entering is the frame of the composite task being entered, left the one last left: the
	// task's $task reads them until the next task is entered.
	entering, left *frame
	// frameKeys are the variables of the frames' stored parts when the step began.
	frameKeys map[string]bool
}

// choice decides among options by eval (a seam the graph mirrors with every option taken).
func (r *run) choice(_ int, eval func() int) int { return eval() }

// evalTpl evaluates a template for task t on input; a failure is an expression Problem.
func (r *run) evalTpl(t *task, tpl *template, input any, extra map[string]any) (any, *Problem) {
	v, err := tpl.eval(r.ctx, input, r.vars(t, input, extra))
	if err != nil {
		return nil, expressionProblem(t.path, err)
	}
	return v, nil
}

// vars are the runtime arguments of an expression of task t (args.go): extra adds or replaces
// some ($input and $output of output.as and export.as, the names catch binds).
func (r *run) vars(t *task, input any, extra map[string]any) map[string]any {
	secrets := lazyArg(func() any { return r.prog.secretsValue() })
	v := map[string]any{
		"$context":       r.st.Context,
		"$input":         input,
		"$secrets":       secrets,
		"$secret":        secrets,
		"$task":          r.taskArgOf(t, nil),
		"$workflow":      lazyArg(r.workflowArg),
		"$runtime":       lazyArg(r.prog.runtimeArg),
		"$authorization": r.auth,
	}
	for _, f := range r.st.Frames {
		owner := r.prog.byPath[f.Path]
		switch {
		case owner == nil:
		case owner.kind == kindFor && f.Index < f.Count:
			v["$"+owner.forEach] = f.Item
			v["$"+owner.forAt] = f.Index
		case owner.kind == kindTry && f.Catching:
			v["$"+owner.catch.as] = f.Error
		}
	}
	for k, x := range extra {
		v[k] = x
	}
	return v
}

func truthy(v any) bool { return v != nil && v != false }

func (r *run) push(f frame) {
	f.entered = true
	r.st.Frames = append(r.st.Frames, f)
}

func (r *run) top() *frame { return &r.st.Frames[len(r.st.Frames)-1] }

func (r *run) pop() frame {
	f := r.st.Frames[len(r.st.Frames)-1]
	r.st.Frames = r.st.Frames[:len(r.st.Frames)-1]
	r.left = &f
	return f
}

// start begins the workflow: its input through input.from, then its first task.
func (r *run) start(input any) target {
	root := r.prog.root
	r.st.Input, r.st.Context = input, map[string]any{}
	if p := validate(root.inputSchema, input, "/input/schema", "Input"); p != nil {
		return target{fault: p}
	}
	in := input
	if root.inputFrom != nil {
		v, p := r.evalTpl(root, root.inputFrom, input, nil)
		if p != nil {
			p.Instance = "/input/from"
			return target{fault: p}
		}
		in = v
	}
	r.st.Input, r.st.Data = in, in
	r.push(frame{Path: root.path, Input: in, Deadline: startDeadline(r.now, root.timeout)})
	return r.enter(root.body.tasks[0])
}

// enter goes into task t, whose input is the current data: a task to run is the target; a
// composite task is entered down to its first task to run.
func (r *run) enter(t *task) target {
	r.left = nil
	if r.hops++; r.hops > maxHops {
		return target{fault: &Problem{Type: errTypeRuntime, Status: 500, Title: "Flow Error", Detail: fmt.Sprintf("no task to run within %d moves", maxHops), Instance: t.path}}
	}
	if t.cond != nil {
		v, p := r.evalTpl(t, &template{expr: t.cond}, r.st.Data, nil)
		if p != nil {
			return r.fault(t, p)
		}
		if r.choice(2, func() int { return map[bool]int{true: 0, false: 1}[truthy(v)] }) == 1 {
			return r.next(t, thenContinue) // skipped: its output is its input
		}
	}
	if len(t.exts) > 0 {
		return r.extend(t)
	}
	return r.enterTask(t)
}

// enterTask goes into task t once its if held and its extensions' before lists ran.
func (r *run) enterTask(t *task) target {
	if !composite(t.kind) {
		return target{leaf: t}
	}
	in := r.st.Data
	if p := validate(t.inputSchema, in, t.path, "Input"); p != nil {
		return r.fault(t, p)
	}
	if t.inputFrom != nil {
		v, p := r.evalTpl(t, t.inputFrom, in, nil)
		if p != nil {
			return r.fault(t, p)
		}
		in = v
	}
	f := frame{Path: t.path, Input: in, Deadline: startDeadline(r.now, t.timeout)}
	if r.prog.usesTask {
		f.Started = r.now
		if t.inputFrom != nil {
			f.RawInput = r.st.Data
		}
	}
	r.st.Data = in
	switch t.kind {
	case kindFor:
		r.entering = &f
		v, p := r.evalTpl(t, &template{expr: t.forIn}, in, nil)
		r.entering = nil
		if p != nil {
			return r.fault(t, p)
		}
		items, isList := v.([]any)
		if !isList && v != nil {
			return r.fault(t, &Problem{Type: errTypeExpression, Status: 400, Title: "Expression Error", Detail: fmt.Sprintf("for.in gave %T, not a list", v), Instance: t.path + "/for/in"})
		}
		f.Items, f.Count = items, len(items)
		if len(items) > 0 {
			f.Item = items[0]
		}
		r.push(f)
		if r.choice(2, func() int { return map[bool]int{true: 0, false: 1}[len(items) > 0] }) == 1 {
			r.pop()
			return r.complete(t, in, in, t.then)
		}
		return r.iterate(t)
	case kindTry:
		f.Started = r.now
	}
	r.push(f)
	return r.enter(t.body.tasks[0])
}

// iterate runs a for task's body for its current item, unless its while condition says stop.
func (r *run) iterate(t *task) target {
	if t.while != nil {
		v, p := r.evalTpl(t, &template{expr: t.while}, r.st.Data, nil)
		if p != nil {
			return r.fault(t, p)
		}
		if r.choice(2, func() int { return map[bool]int{true: 0, false: 1}[truthy(v)] }) == 1 {
			f := r.pop()
			return r.complete(t, f.Input, r.st.Data, t.then)
		}
	}
	return r.enter(t.body.tasks[0])
}

// complete finishes task t with its raw output: output.as, output.schema, export.as,
// export.schema, then the flow directive.
func (r *run) complete(t *task, input, raw any, then string) target {
	out := raw
	extra := map[string]any{"$input": input, "$task": r.taskArgOf(t, raw)}
	if t.outputAs != nil {
		v, p := r.evalTpl(t, t.outputAs, raw, extra)
		if p != nil {
			return r.fault(t, p)
		}
		out = v
	}
	if p := validate(t.outputSchema, out, t.path, "Output"); p != nil {
		if t.kind == kindRoot {
			p.Instance = "/output/schema"
			return target{fault: p}
		}
		return r.fault(t, p)
	}
	ctx := r.st.Context
	if t.exportAs != nil {
		extra["$output"] = out
		v, p := r.evalTpl(t, t.exportAs, out, extra)
		if p != nil {
			return r.fault(t, p)
		}
		ctx = v
	}
	if p := validate(t.exportSchema, ctx, t.path, "Context"); p != nil {
		return r.fault(t, p) // the context stays as it was
	}
	r.st.Context = ctx
	r.st.Data = out
	r.auth = nil // a call's authentication is its own, not the tasks' around it
	if t.kind == kindRoot {
		r.st.Output = out
		return target{end: true}
	}
	return r.completeExtended(t, input, then)
}

// next follows a flow directive after task t completed (where it goes: afterThen).
func (r *run) next(t *task, then string) target {
	if tg, ok := r.nextInExtension(t, then); ok {
		return tg
	}
	f := afterThen(t, then)
	switch f.kind {
	case flowEndBranch:
		return r.endBranch()
	case flowExit:
		if f.end {
			r.st.Frames = r.st.Frames[:1]
		}
		return r.exitList(f.list)
	default:
		return r.enter(f.to)
	}
}

// exitList leaves a list of tasks: its owner loops again (for) or completes.
func (r *run) exitList(l *taskList) target {
	owner := l.owner
	if owner.kind == kindExt {
		return r.leaveExtension(l, false)
	}
	if owner.kind == kindFor {
		f := r.top()
		more := r.choice(2, func() int { return map[bool]int{true: 0, false: 1}[f.Index+1 < f.Count] })
		if more == 0 {
			if f.Index+1 >= len(f.Items) { // a branch's copy of its parent's loop: never advanced by the branch
				return target{fault: &Problem{Type: errTypeRuntime, Status: 500, Title: "Lost Loop State",
					Detail: "the items of the loop are not stored with this workflow", Instance: owner.path}}
			}
			f.Index++
			f.Item = f.Items[f.Index]
			return r.iterate(owner)
		}
	}
	f := r.pop()
	if owner.itemsOut {
		return r.complete(owner, f.Input, f.Items, owner.then)
	}
	return r.complete(owner, f.Input, r.st.Data, owner.then)
}

// fault handles a Problem raised in task t: the innermost try around it that catches it retries
// its tasks, runs its catch.do, or completes; with none, the workflow faults.
func (r *run) fault(t *task, p *Problem) target {
	r.st.Listen, r.auth = nil, nil
	if p.Instance == "" {
		p.Instance = t.path
	}
	for i := len(r.st.Frames) - 1; i >= 0; i-- {
		owner := r.prog.byPath[r.st.Frames[i].Path]
		if owner != nil && owner.kind == kindFork {
			break // a branch's fault ends its child workflow; the fork faults in the parent
		}
		if owner == nil || owner.kind != kindTry || r.st.Frames[i].Catching {
			continue
		}
		c := owner.catch
		f := &r.st.Frames[i]
		if r.choice(2, func() int { return map[bool]int{true: 0, false: 1}[r.catches(owner, p)] }) == 1 {
			continue
		}
		r.dropExtended(owner.path + "/")
		if c.retry != nil {
			var delay time.Duration
			if r.choice(2, func() int {
				d, ok := r.retryDelay(owner, f, p)
				delay = d
				return map[bool]int{true: 0, false: 1}[ok]
			}) == 0 {
				r.st.Frames = r.st.Frames[:i+1]
				f = &r.st.Frames[i]
				f.Retries++
				r.st.Data = f.Input
				tg := r.enter(owner.body.tasks[0])
				tg.delay += delay
				return tg.after(p)
			}
		}
		r.st.Frames = r.st.Frames[:i+1]
		f = &r.st.Frames[i]
		r.st.Data = f.Input
		if c.do != nil {
			f.Catching, f.Error = true, p.value()
			return r.enter(c.do.tasks[0]).after(p)
		}
		r.pop()
		return r.complete(owner, f.Input, f.Input, owner.then).after(p)
	}
	return target{fault: p}
}

// after marks a target reached by catching p: the Problem the step's attempt failed with.
func (tg target) after(p *Problem) target {
	if tg.caught == nil {
		tg.caught = p
	}
	return tg
}

// catches reports whether a try task's catch takes a Problem: its errors.with filter, when and
// exceptWhen.
func (r *run) catches(owner *task, p *Problem) bool {
	c := owner.catch
	pv := p.value()
	for k, want := range c.filter {
		if k == "details" {
			k = "detail"
		}
		if k == "type" {
			if s, ok := want.(string); ok {
				want = standardErrorType(s)
			}
		}
		if fmt.Sprint(pv[k]) != fmt.Sprint(want) {
			return false
		}
	}
	extra := map[string]any{"$" + c.as: pv}
	if c.when != nil {
		v, err := c.when.eval(r.ctx, pv, r.vars(owner, r.st.Data, extra))
		if err != nil || !truthy(v) {
			return false
		}
	}
	if c.exceptWhen != nil {
		v, err := c.exceptWhen.eval(r.ctx, pv, r.vars(owner, r.st.Data, extra))
		if err == nil && truthy(v) {
			return false
		}
	}
	return true
}

// legacyErrorTypes is the prefix of the standard error types as some documents and the
// conformance features write them (https://serverlessworkflow.io/dsl/errors/types/communication);
// the DSL reference's table names them under standardErrorTypes, as cairn raises them.
const (
	legacyErrorTypes   = "https://serverlessworkflow.io/dsl/errors/types/"
	standardErrorTypes = "https://serverlessworkflow.io/spec/1.0.0/errors/"
)

// standardErrorType returns the type a catch filter names, a standard type written the legacy
// way as the DSL reference writes it.
func standardErrorType(s string) string {
	if rest, ok := strings.CutPrefix(s, legacyErrorTypes); ok && rest != "" && !strings.Contains(rest, "/") {
		return standardErrorTypes + rest
	}
	return s
}

// retryDelay says whether a try task's retry policy runs its tasks again, and after how long.
func (r *run) retryDelay(owner *task, f *frame, p *Problem) (time.Duration, bool) {
	rp := owner.catch.retry
	if rp.maxRetries >= 0 && f.Retries >= rp.maxRetries {
		return 0, false
	}
	if rp.limit > 0 && r.now.Sub(f.Started) >= rp.limit {
		return 0, false
	}
	pv := p.value()
	extra := map[string]any{"$" + owner.catch.as: pv}
	if rp.when != nil {
		v, err := rp.when.eval(r.ctx, pv, r.vars(owner, r.st.Data, extra))
		if err != nil || !truthy(v) {
			return 0, false
		}
	}
	if rp.exceptWhen != nil {
		v, err := rp.exceptWhen.eval(r.ctx, pv, r.vars(owner, r.st.Data, extra))
		if err == nil && truthy(v) {
			return 0, false
		}
	}
	d := rp.delay
	switch rp.backoff {
	case "linear":
		d *= time.Duration(f.Retries + 1)
	case "exponential":
		for i := 0; i < f.Retries && d < 24*time.Hour; i++ {
			d *= 2
		}
	}
	if rp.jitterTo > rp.jitterFrom {
		d += rp.jitterFrom + time.Duration(rand.Int64N(int64(rp.jitterTo-rp.jitterFrom)))
	}
	return d, true
}
