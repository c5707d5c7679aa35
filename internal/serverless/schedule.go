package serverless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/workflow"
)

// A document's schedule says when its workflows start by themselves:
//   - `cron` and `every` become a cairn schedule of the document's type, named as the type, kept by
//     every deploy of a new version (workflow.CompiledDocument.Schedule);
//   - `after` starts the next workflow of the type (the newest version, with the same input) the
//     given time after one completes: the completing step asks for it, in the transaction that
//     completes the workflow, so it is started exactly once;
//   - `on` starts a workflow when publishEvent delivers an event its filters match, its input
//     {"events": [the CloudEvent]} (workflow.Definition.StartOn and StartEvent).

// scheduleSpec is a compiled document-level schedule.
type scheduleSpec struct {
	cron  string        // a cron expression, or `@every <duration>` for every
	after time.Duration // restart after completion (0: none)
	on    *listenSpec   // the events that start a workflow (nil: none)
	types []string      // the event types of on's filters
}

// compileSchedule reads the document's schedule, if any.
func (c *compiler) compileSchedule(doc map[string]any) error {
	raw, ok := doc["schedule"]
	if !ok {
		return nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return faultAt("/schedule", "a schedule is an object with one of every, cron, after or on")
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		switch k {
		case "every", "cron", "after", "on":
			keys = append(keys, k)
		default:
			return faultAt("/schedule/"+escapePointer(k), "a schedule has every, cron, after or on, not %q", k)
		}
	}
	sort.Strings(keys)
	if len(keys) != 1 {
		return faultAt("/schedule", "cairn takes one of every, cron, after or on in a schedule, not %v", keys)
	}
	s := &c.prog.sched
	switch k := keys[0]; k {
	case "every":
		d, err := parseDuration(m[k], "/schedule/every")
		if err != nil {
			return err
		}
		if d < engine.MinScheduleInterval || d%time.Second != 0 {
			return faultAt("/schedule/every", "the interval must be a whole number of seconds, at least %s (not %s)", engine.MinScheduleInterval, d)
		}
		s.cron = fmt.Sprintf("@every %s", d)
		if err := engine.CheckCron(s.cron); err != nil {
			return faultAt("/schedule/every", "%s", messageOf(err))
		}
	case "cron":
		expr, _ := m[k].(string)
		if expr == "" {
			return faultAt("/schedule/cron", "cron is a cron expression (like 0 0 * * *)")
		}
		if err := workflow.CheckString("cron", expr, workflow.MaxKeyLength); err != nil {
			return faultAt("/schedule/cron", "%s", messageOf(err))
		}
		if err := engine.CheckCron(expr); err != nil {
			return faultAt("/schedule/cron", "%s", messageOf(err))
		}
		s.cron = expr
	case "after":
		d, err := parseDuration(m[k], "/schedule/after")
		if err != nil {
			return err
		}
		if d <= 0 {
			return faultAt("/schedule/after", "the delay before the next run must be longer than zero")
		}
		s.after = d
	case "on":
		return c.compileScheduleOn(m[k])
	}
	return nil
}

// compileScheduleOn reads schedule.on: `one`, or `any` of filters (each event that matches one
// starts a workflow), or `all` of one filter. Starting a workflow from several events (all of
// several filters, until) and correlation are refused: no workflow exists yet to collect them in.
func (c *compiler) compileScheduleOn(raw any) error {
	const ptr = "/schedule/on"
	to, ok := raw.(map[string]any)
	if !ok {
		return faultAt(ptr, "on is an event consumption strategy: one, any or all")
	}
	if _, ok := to["until"]; ok {
		return faultAt(ptr+"/until", "until in a schedule is not supported by cairn: each event starts a workflow of its own")
	}
	spec := &listenSpec{read: "envelope"}
	var filters []any
	fptr := ptr
	switch {
	case to["one"] != nil:
		spec.mode, filters, fptr = "one", []any{to["one"]}, ptr+"/one"
	case to["any"] != nil:
		spec.mode, fptr = "any", ptr+"/any"
		filters, _ = to["any"].([]any)
	case to["all"] != nil:
		spec.mode, fptr = "all", ptr+"/all"
		filters, _ = to["all"].([]any)
		if len(filters) > 1 {
			return faultAt(fptr, "all with several filters in a schedule is not supported by cairn: a workflow starts from one event")
		}
	default:
		return faultAt(ptr, "on needs one, any or all")
	}
	if len(filters) == 0 {
		return faultAt(fptr, "a schedule needs at least one event filter (with a type) to start on")
	}
	s := &c.prog.sched
	seen := map[string]bool{}
	for i, raw := range filters {
		p := fptr
		if spec.mode != "one" {
			p = fmt.Sprintf("%s/%d", fptr, i)
		}
		f, _ := raw.(map[string]any)
		with, _ := f["with"].(map[string]any)
		typ, _ := with["type"].(string)
		if typ == "" || isStrict(typ) {
			return faultAt(p+"/with/type", "cairn needs the event type that starts the workflow, as a literal")
		}
		if err := workflow.CheckString(p+"/with/type", typ, workflow.MaxKeyLength); err != nil {
			return faultAt(p+"/with/type", "the event type must have at most %d bytes, without NUL", workflow.MaxKeyLength)
		}
		if _, ok := f["correlate"]; ok {
			return faultAt(p+"/correlate", "correlation in a schedule is not supported by cairn: a workflow starts from one event")
		}
		ef, err := compileFilter(with, nil, scope(argsWorkflowInput).with(), p)
		if err != nil {
			return err
		}
		ef.typ = typ
		spec.filters = append(spec.filters, ef)
		if !seen[typ] {
			seen[typ] = true
			s.types = append(s.types, typ)
		}
	}
	s.on = spec
	return nil
}

// startEvent is the definition's workflow.Definition.StartEvent: the input of the workflow an
// event starts ({"events": [event]}), or nil when no filter of schedule.on matches it.
func (p *program) startEvent(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	var ev map[string]any
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, fmt.Errorf("error decoding the event: %w", err)
	}
	ctx = withBudget(ctx, p.exprs)
	vars := map[string]any{
		"$context": nil, "$input": nil, "$secret": p.secretsValue(), "$secrets": p.secretsValue(), "$task": map[string]any{"name": "schedule", "reference": "/schedule/on"},
		"$workflow": map[string]any{"definition": map[string]any{"type": p.typ, "version": p.label}}, "$runtime": map[string]any{"name": "cairn"},
	}
	for _, f := range p.sched.on.filters {
		if ev["type"] != f.typ {
			continue
		}
		ok, err := attrsMatch(ctx, f, ev, vars)
		if err != nil {
			return nil, err
		}
		if ok {
			return json.Marshal(map[string]any{"events": []any{p.redact.value(ev)}})
		}
	}
	return nil, nil
}

// messageOf is the message of a refusal, without its field.
func messageOf(err error) string {
	var we *workflow.Error
	if errors.As(err, &we) {
		return we.Message
	}
	return err.Error()
}

// restartAfter asks, when a workflow of a document with schedule.after completes, for the next one
// (the newest version, the same input) that long after; it starts with the step that completes
// this one. A fork's branch and a child of run: workflow are not restarted.
func (r *run) restartAfter(sc workflow.StepContext) {
	if r.prog.sched.after <= 0 || sc.Workflow().ParentID != nil {
		return
	}
	at := r.now.Add(r.prog.sched.after)
	sc.StartChild(workflow.ChildRequest{Type: r.prog.typ, Input: sc.RawInput(), Detached: true, StartAt: &at})
}
