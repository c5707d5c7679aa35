package serverless

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
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
)

// The names of the states that are not tasks.
const (
	stateStart = "start"
	stateEnd   = "end"
	stateFault = "fault"
)

// load reads a step's data from the workflow's variables.
func (p *program) load(sc *workflow.StepContext) (*run, error) {
	st := &data{}
	for key, dst := range map[string]any{varInput: &st.Input, varData: &st.Data, varContext: &st.Context, varFrames: &st.Frames, varWaitUntil: &st.WaitUntil} {
		if _, err := sc.Var(key, dst); err != nil {
			return nil, err
		}
	}
	return &run{ctx: sc, prog: p, st: st, now: time.Now().UTC(), wfID: strconv.FormatInt(sc.WorkflowID(), 10)}, nil
}

// save writes the step's data back to the workflow's variables.
func (r *run) save(sc *workflow.StepContext) error {
	for key, v := range map[string]any{varInput: r.st.Input, varData: r.st.Data, varContext: r.st.Context, varFrames: r.st.Frames} {
		if err := sc.SetVar(key, v); err != nil {
			return err
		}
	}
	if r.st.WaitUntil != nil {
		return sc.SetVar(varWaitUntil, r.st.WaitUntil)
	}
	return sc.SetVar(varWaitUntil, nil)
}

// handler is the step of a state: the start, or a task.
func (p *program) handler(t *task) workflow.StepFunc {
	return func(sc *workflow.StepContext) (workflow.Next, error) {
		r, err := p.load(sc)
		if err != nil {
			return workflow.Next{}, workflow.NonRetryable(err)
		}
		var tg target
		switch {
		case t == nil:
			var input any
			if err := json.Unmarshal(sc.RawInput(), &input); err != nil {
				return workflow.Next{}, workflow.NonRetryable(fmt.Errorf("error decoding the workflow's input: %w", err))
			}
			tg = r.start(input)
		case t.kind == kindWait:
			// A durable timer: the step records when the wait ends and is run again then by the
			// engine (the workflow's next activation); it never sleeps.
			if r.st.WaitUntil == nil {
				until := r.now.Add(t.wait)
				r.st.WaitUntil = &until
			}
			if left := r.st.WaitUntil.Sub(r.now); left > 0 {
				if err := r.save(sc); err != nil {
					return workflow.Next{}, err
				}
				return workflow.RetryAfter(left).WithText("waiting until " + r.st.WaitUntil.Format(time.RFC3339Nano)), nil
			}
			r.st.WaitUntil = nil
			tg = r.runTask(sc, t)
		default:
			tg = r.runTask(sc, t)
		}
		return r.finishStep(sc, tg)
	}
}

// finishStep saves the step's data and turns where it goes into the engine's Next.
func (r *run) finishStep(sc *workflow.StepContext, tg target) (workflow.Next, error) {
	if tg.stepErr != nil {
		return workflow.Next{}, tg.stepErr
	}
	if err := r.save(sc); err != nil {
		return workflow.Next{}, err
	}
	switch {
	case tg.fault != nil:
		return workflow.Fail(tg.fault.String()), nil
	case tg.end:
		if err := sc.SetVar(varOutput, r.st.Output); err != nil {
			return workflow.Next{}, err
		}
		return workflow.Finish(), nil
	case tg.await:
		return workflow.MoveTo(tg.leaf.path + awaitSuffix), nil
	case tg.delay > 0:
		return workflow.MoveToAt(tg.leaf.path, r.now.Add(tg.delay)).WithText("retrying after " + tg.delay.String()), nil
	default:
		return workflow.MoveTo(tg.leaf.path), nil
	}
}

// awaitHandler is the step of the WAIT state of a `run: workflow` task: its child ended.
func (p *program) awaitHandler(t *task) workflow.StepFunc {
	return func(sc *workflow.StepContext) (workflow.Next, error) {
		r, err := p.load(sc)
		if err != nil {
			return workflow.Next{}, workflow.NonRetryable(err)
		}
		var tg target
		if in, pr := r.taskInput(t); pr != nil {
			tg = r.fault(t, pr)
		} else if out, pr := r.childOutcome(sc, t); pr != nil {
			tg = r.fault(t, pr)
		} else {
			tg = r.complete(t, in, out, t.then)
		}
		return r.finishStep(sc, tg)
	}
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
func (r *run) runTask(sc *workflow.StepContext, t *task) target {
	in, p := r.taskInput(t)
	if p != nil {
		return r.fault(t, p)
	}
	switch t.kind {
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
		var event any
		if s := sc.Signal(); s != nil && len(s.Payload) > 0 {
			if err := json.Unmarshal(s.Payload, &event); err != nil {
				return r.fault(t, &Problem{Type: errTypeValidation, Status: 400, Title: "Invalid Event", Detail: err.Error()})
			}
		}
		if m, ok := event.(map[string]any); ok && m["specversion"] != nil {
			event = m["data"] // a whole CloudEvent: the task reads its data
		}
		return r.complete(t, in, []any{event}, t.then)
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
			sc.Log("emit", string(b))
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
