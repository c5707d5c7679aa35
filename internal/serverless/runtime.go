package serverless

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// The variables a workflow of a deployed definition keeps its data in.
const (
	varInput     = "input"
	varData      = "data"
	varContext   = "context"
	varFrames    = "frames"
	varOutput    = workflow.OutputVariable
	varWaitUntil = "waitUntil"
	varBranch    = "branch"
	// varTaskDeadline is when the current task times out; varDeadline is when a WAIT state wakes
	// whatever it waits for (workflow.WaitFor.DeadlineVariable).
	varTaskDeadline = "taskDeadline"
	varDeadline     = "deadline"
	varListen       = "listen"
	varTaskStarted  = "taskStarted"
	varExtended     = "extended"
)

// The names of the states that are not tasks.
const (
	stateStart = "start"
	stateEnd   = "end"
	stateFault = "fault"
)

// load reads a step's data from the workflow's variables.
func (p *program) load(sc workflow.StepContext) (*run, error) {
	st := &data{}
	for key, dst := range map[string]any{varInput: &st.Input, varData: &st.Data, varContext: &st.Context, varWaitUntil: &st.WaitUntil, varBranch: &st.Branch, varTaskDeadline: &st.TaskDeadline, varListen: &st.Listen, varTaskStarted: &st.TaskStarted, varExtended: &st.Extended} {
		if _, err := sc.Var(key, dst); err != nil {
			return nil, err
		}
	}
	frames, keys, err := loadFrames(sc, st.Input)
	if err != nil {
		return nil, err
	}
	st.Frames = frames
	return &run{ctx: withBudget(sc, p.exprs), prog: p, st: st, frameKeys: keys, now: time.Now().UTC(), wfID: strconv.FormatInt(sc.WorkflowID(), 10), sc: sc}, nil
}

// save writes what the step changed of its data back to the workflow's variables: each variable
// set is a row of the step's action, so what did not change is not written again.
func (r *run) save(sc workflow.StepContext) error {
	if err := r.saveAttributes(sc); err != nil {
		return err
	}
	for _, kv := range []struct {
		key string
		v   any
	}{{varInput, r.st.Input}, {varData, r.st.Data}, {varContext, r.st.Context}, {varTaskDeadline, r.st.TaskDeadline},
		{varBranch, r.st.Branch}, {varWaitUntil, r.st.WaitUntil}, {varListen, r.st.Listen}, {varTaskStarted, r.st.TaskStarted}, {varExtended, r.st.Extended}} {
		if err := setChanged(sc, kv.key, kv.v); err != nil {
			return err
		}
	}
	return r.saveFrames(sc)
}

// setChanged sets a variable only when its value changes (null removes it): the variables a
// step sets are written with its action.
func setChanged(sc workflow.StepContext, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("error encoding variable %q: %w", key, err)
	}
	var old json.RawMessage
	had, err := sc.Var(key, &old)
	if err != nil {
		return err
	}
	isNull := string(b) == "null"
	switch {
	case isNull && (!had || string(old) == "null"), had && sameText(old, b):
		return nil
	case isNull:
		return sc.SetVar(key, nil)
	}
	return sc.SetVar(key, json.RawMessage(b))
}

// sameText reports whether two JSON texts hold the same value. The text a database gives back
// may differ from Go's for the same value (PostgreSQL's jsonb spaces and orders an object's keys
// its own way): compared as bytes, an unchanged variable would be written again after each claim.
func sameText(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	decode := func(raw []byte) (any, bool) {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber() // numbers as written: two large integers never compare equal by rounding
		var v any
		return v, d.Decode(&v) == nil
	}
	va, okA := decode(a)
	vb, okB := decode(b)
	return okA && okB && reflect.DeepEqual(va, vb)
}

// handler is the step of a state: the start, or a task.
func (p *program) handler(t *task) workflow.StepFunc {
	return func(sc workflow.StepContext) (workflow.Next, error) {
		r, err := p.load(sc)
		if err != nil {
			return workflow.Next{}, workflow.NonRetryable(err)
		}
		if t == nil {
			var input any
			if err := json.Unmarshal(sc.RawInput(), &input); err != nil {
				return workflow.Next{}, workflow.NonRetryable(fmt.Errorf("error decoding the workflow's input: %w", err))
			}
			wf := sc.Workflow()
			if b := branchOf(&wf, input); b != nil {
				return r.finishStep(sc, r.startBranch(b))
			}
			return r.finishStep(sc, r.start(input))
		}
		if p := r.align(t); p != nil {
			return r.finishStep(sc, r.fault(t, p))
		}
		if tg, ok := r.timedOut(t, r.now); ok {
			return r.finishStep(sc, tg)
		}
		deadline := r.deadline()
		if deadline != nil {
			// A call or an expression is bounded by the task's deadline too.
			ctx, cancel := context.WithDeadline(sc, *deadline)
			defer cancel()
			r.ctx = ctx
		}
		if t.kind == kindWait {
			// A durable timer: the step records when the wait ends and is run again then by the
			// engine (the workflow's next activation), or at its deadline; it never sleeps.
			if r.st.WaitUntil == nil {
				until := r.now.Add(t.wait)
				r.st.WaitUntil = &until
			}
			wake := *r.st.WaitUntil
			if deadline != nil && deadline.Before(wake) {
				wake = *deadline
			}
			if left := wake.Sub(r.now); left > 0 {
				if err := r.save(sc); err != nil {
					return workflow.Next{}, err
				}
				return workflow.RetryAfter(left).WithText("waiting until " + r.st.WaitUntil.Format(time.RFC3339Nano)), nil
			}
			r.st.WaitUntil = nil
		}
		return r.finishStep(sc, r.runTask(sc, t))
	}
}

// finishStep saves the step's data and turns where it goes into the engine's Next.
func (r *run) finishStep(sc workflow.StepContext, tg target) (workflow.Next, error) {
	if tg.stepErr != nil {
		return workflow.Next{}, tg.stepErr
	}
	if r.prog.usesTask && tg.leaf != nil && !tg.await && !tg.again && !tg.end && tg.fault == nil {
		r.st.TaskStarted = &taskStart{Path: tg.leaf.path, At: r.now.Add(tg.delay)}
	}
	// The task to run next gets its deadline; one that has passed already faults it now.
	for range maxHops {
		if tg.leaf == nil || tg.await || tg.again || tg.end || tg.fault != nil {
			break
		}
		r.st.TaskDeadline = startDeadline(r.now.Add(tg.delay), tg.leaf.timeout)
		next, ok := r.timedOut(tg.leaf, time.Now().UTC())
		if !ok {
			break
		}
		tg = next
	}
	if tg.end {
		if err := r.claimWin(sc); err != nil {
			return workflow.Next{}, err
		}
	}
	// A WAIT state (listen, the children of fork and run) is woken at its deadline.
	var wake *time.Time
	if tg.fault == nil && !tg.end && (tg.await || tg.leaf.kind == kindListen) {
		wake = r.deadline()
	}
	if err := setChanged(sc, varDeadline, wake); err != nil {
		return workflow.Next{}, err
	}
	r.hideSecrets(tg.fault, tg.caught)
	if err := r.save(sc); err != nil {
		return workflow.Next{}, err
	}
	if tg.end {
		if err := sc.SetVar(varOutput, r.st.Output); err != nil {
			return workflow.Next{}, err
		}
		r.restartAfter(sc)
	}
	next := r.move(tg, wake)
	if tg.caught != nil && tg.fault == nil {
		// A try caught the task's fault: the attempt failed all the same, and says so.
		next = next.AfterFailure(tg.caught.String())
	}
	return next, nil
}

// move is the engine's Next for where a step goes.
func (r *run) move(tg target, wake *time.Time) workflow.Next {
	retrying := ""
	if tg.caught != nil {
		retrying = tg.caught.summary() + "; "
	}
	switch {
	case tg.fault != nil:
		return workflow.Fail(tg.fault.String())
	case tg.end:
		return workflow.Finish()
	case tg.await && wake != nil:
		return workflow.MoveToAt(tg.leaf.path+awaitSuffix, *wake)
	case tg.await:
		return workflow.MoveTo(tg.leaf.path + awaitSuffix)
	case wake != nil:
		return workflow.MoveToAt(tg.leaf.path, *wake)
	case tg.delay > 0:
		at := r.now.Add(tg.delay)
		if d := r.deadline(); d != nil && d.Before(at) {
			at = *d
		}
		return workflow.MoveToAt(tg.leaf.path, at).WithText(retrying + "retrying after " + tg.delay.String())
	default:
		return workflow.MoveTo(tg.leaf.path)
	}
}

// awaitHandler is the step of the WAIT state of a `run: workflow` task: its child ended.
func (p *program) awaitHandler(t *task) workflow.StepFunc {
	return func(sc workflow.StepContext) (workflow.Next, error) {
		r, err := p.load(sc)
		if err != nil {
			return workflow.Next{}, workflow.NonRetryable(err)
		}
		var tg target
		if p := r.align(t); p != nil {
			tg = r.fault(t, p)
		} else if timeout, ok := r.timedOut(t, r.now); ok {
			if err := r.cancelAwaited(sc, t); err != nil {
				return workflow.Next{}, err
			}
			tg = timeout
		} else if in, pr := r.taskInput(t); pr != nil {
			tg = r.fault(t, pr)
		} else if out, pr := r.awaited(sc, t); pr != nil {
			tg = r.fault(t, pr)
		} else {
			tg = r.complete(t, in, out, t.then)
		}
		return r.finishStep(sc, tg)
	}
}

// awaited is the outcome of the children a task waited for.
func (r *run) awaited(sc workflow.StepContext, t *task) (any, *Problem) {
	if t.kind == kindFork {
		return r.forkOutcome(sc, t)
	}
	return r.childOutcome(sc, t)
}

// taskInput is a task's input: the data, checked by input.schema and transformed by input.from.
func (r *run) taskInput(t *task) (any, *Problem) {
	in := r.st.Data
	if p := validate(t.inputSchema, in, t.path, "Input"); p != nil {
		return nil, p
	}
	if t.inputFrom != nil {
		v, p := r.evalTpl(t, t.inputFrom, in, nil)
		if p != nil {
			return nil, p
		}
		in = v
	}
	return in, nil
}

// runTask runs one task that is a state, and moves on from it.
func (r *run) runTask(sc workflow.StepContext, t *task) target {
	in, p := r.taskInput(t)
	if p != nil {
		return r.fault(t, p)
	}
	switch t.kind {
	case kindFork:
		if p := r.startBranches(sc, t, in); p != nil {
			return r.fault(t, p)
		}
		return target{leaf: t, await: true}
	case kindRun:
		if p := r.startChild(sc, t, in); p != nil {
			return r.fault(t, p)
		}
		if t.run.await {
			return target{leaf: t, await: true}
		}
		return r.complete(t, in, in, t.then)
	case kindSet:
		out, p := r.evalTpl(t, t.set, in, nil)
		if p != nil {
			return r.fault(t, p)
		}
		return r.complete(t, in, out, t.then)
	case kindSwitch:
		for _, c := range t.cases {
			if c.when == nil {
				continue
			}
			v, err := c.when.eval(r.ctx, in, r.vars(t, in, nil))
			if err != nil {
				return r.fault(t, expressionProblem(t.path, err))
			}
			if truthy(v) {
				return r.complete(t, in, in, c.then)
			}
		}
		for _, c := range t.cases {
			if c.when == nil {
				return r.complete(t, in, in, c.then)
			}
		}
		return r.complete(t, in, in, t.then)
	case kindRaise:
		v, p := r.evalTpl(t, t.raise, in, nil)
		if p != nil {
			return r.fault(t, p)
		}
		return r.fault(t, problemOf(v, t.path))
	case kindWait:
		return r.complete(t, in, in, t.then)
	case kindCall:
		out, p := r.callHTTP(t, in)
		if p != nil {
			return r.fault(t, p)
		}
		return r.complete(t, in, out, t.then)
	case kindGRPC:
		out, p := r.callGRPC(t, in)
		if p != nil {
			return r.fault(t, p)
		}
		return r.complete(t, in, out, t.then)
	case kindOpenAPI:
		out, p := r.callOpenAPI(t, in)
		if p != nil {
			return r.fault(t, p)
		}
		return r.complete(t, in, out, t.then)
	case kindAsyncAPI:
		return r.runAsyncAPI(t, in)
	case kindProcess:
		out, p, err := r.runProcess(sc, t, in)
		if err != nil {
			return target{leaf: t, stepErr: err}
		}
		if p != nil {
			return r.fault(t, p)
		}
		return r.complete(t, in, out, t.then)
	case kindFunction:
		out, p, err := r.callFunction(sc, t, in)
		if err != nil {
			return target{leaf: t, stepErr: err}
		}
		if p != nil {
			return r.fault(t, p)
		}
		return r.complete(t, in, out, t.then)
	case kindListen:
		if sc.Signal() == nil { // run without its event: woken at its deadline
			return r.fault(t, timeoutProblem(t))
		}
		var event any
		if s := sc.Signal(); len(s.Payload) > 0 {
			if err := json.Unmarshal(s.Payload, &event); err != nil {
				return r.fault(t, &Problem{Type: errTypeValidation, Status: 400, Title: "Invalid Event", Detail: err.Error()})
			}
		}
		return r.hear(t, in, envelopeOf(sc.Signal().Name, event))
	case kindEmit:
		v, p := r.evalTpl(t, t.emit, in, nil)
		if p != nil {
			return r.fault(t, p)
		}
		ev, _ := v.(map[string]any)
		if ev == nil {
			ev = map[string]any{}
		}
		if ev["id"] == nil {
			ev["id"] = newEventID()
		}
		ev["specversion"] = "1.0"
		if ev["time"] == nil {
			ev["time"] = r.now.Format(time.RFC3339Nano)
		}
		if ev["source"] == nil {
			ev["source"] = "cairn/" + r.prog.typ
		}
		if b, err := json.Marshal(ev); err == nil {
			sc.Log("emit", r.prog.redact.text(string(b)))
		}
		return r.complete(t, in, ev, t.then)
	}
	return r.fault(t, &Problem{Type: errTypeRuntime, Status: 500, Title: "Unsupported Task", Detail: "task kind " + t.kind + " cannot run", Instance: t.path})
}

// problemOf reads a raised error's evaluated fields.
func problemOf(v any, instance string) *Problem {
	m, _ := v.(map[string]any)
	p := &Problem{Instance: instance}
	p.Type, _ = m["type"].(string)
	switch s := m["status"].(type) {
	case float64:
		p.Status = int(s)
	case int:
		p.Status = s
	case string:
		p.Status, _ = strconv.Atoi(s)
	}
	p.Title, _ = m["title"].(string)
	p.Detail, _ = m["detail"].(string)
	if s, ok := m["instance"].(string); ok && s != "" {
		p.Instance = s
	}
	return p
}

func newEventID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ProblemOf decodes a workflow's lastError as Problem Details (nil when it is not one).
func ProblemOf(w *persistence.Workflow) *Problem {
	if w.LastError == nil {
		return nil
	}
	p := new(Problem)
	if json.Unmarshal([]byte(*w.LastError), p) != nil || p.Type == "" {
		return nil
	}
	return p
}
