package serverless

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"

	"github.com/cairnflow/cairn/workflow"
)

// A listen task waits in a WAIT state for a signal named by one of its event types (signalWorkflow,
// or publishEvent for every workflow listening for that type), or for a signal of any name with
// an empty any. Each event that arrives is checked against the filters of its type: its attributes
// (a literal, a regular expression, or a runtime expression on the attribute's value) and its
// correlations. An event that matches no filter is consumed and the task waits on; `all` waits
// until every filter has matched an event; `any` with `until` takes events until the condition
// holds on the events taken, or until the events of `until` came.

// listenSpec is a compiled listen task (or the events of an until).
type listenSpec struct {
	mode    string // one, any or all
	filters []eventFilter
	read    string // data, envelope or raw
	// untilExpr stops an any when it holds on the events taken so far (as read).
	untilExpr *expr
	// untilEvents stops an any when its events came (they are not in the output).
	untilEvents *listenSpec
	// foreach is the loop that processes the events taken (listen_foreach.go).
	foreach *task
}

// eventFilter is one filter of a listen task; an empty any has one filter of no type, which every
// event matches.
type eventFilter struct {
	typ       string
	attrs     map[string]attrMatch // the attributes besides type
	correlate []correlation
}

// attrMatch is how an event attribute matches: a runtime expression on its value that must be
// truthy, or else a regular expression it must match whole, or else equality.
type attrMatch struct {
	expr    *expr
	re      *regexp.Regexp
	literal any
}

// correlation links an event to the workflow's data: the value from takes from the event must
// equal expect, or without expect the value the first correlated event gave.
type correlation struct {
	name   string
	from   *expr
	expect *template
}

// listenState is a listen task's progress, kept with the workflow's data while it waits.
type listenState struct {
	Events       []any          `json:"events"`
	Matched      []bool         `json:"matched"`
	UntilMatched []bool         `json:"untilMatched,omitempty"`
	Values       map[string]any `json:"values,omitempty"` // correlation values without expect
}

func (c *compiler) compileListen(t *task, raw any, sc scope) error {
	t.kind = kindListen
	m, _ := raw.(map[string]any)
	to, ok := m["to"].(map[string]any)
	if !ok {
		return faultAt(t.path+"/listen/to", "listen needs to: one, any or all")
	}
	read := "data"
	if r, ok := m["read"].(string); ok {
		switch r {
		case "data", "envelope", "raw":
			read = r
		default:
			return faultAt(t.path+"/listen/read", "read must be data, envelope or raw, not %q", r)
		}
	}
	ptr := t.path + "/listen/to"
	spec, err := compileStrategy(to, sc, ptr, read)
	if err != nil {
		return err
	}
	if until, ok := to["until"]; ok {
		uptr := ptr + "/until"
		if spec.mode != "any" {
			return faultAt(uptr, "until goes with any")
		}
		switch u := until.(type) {
		case string:
			if spec.untilExpr, err = compileExpr(u, sc, uptr); err != nil {
				return err
			}
		case map[string]any:
			if _, nested := u["until"]; nested {
				return faultAt(uptr+"/until", "an until inside an until is not supported by cairn")
			}
			if spec.untilEvents, err = compileStrategy(u, sc, uptr, read); err != nil {
				return err
			}
		default:
			return faultAt(uptr, "until is a runtime expression or the events that stop listening (one, any or all)")
		}
	}
	t.listenSpec = spec
	// The spec places foreach beside listen in the task; cairn also reads it inside listen.
	inner, hasInner := m["foreach"]
	outer, hasOuter := t.def["foreach"]
	switch {
	case hasInner && hasOuter:
		return faultAt(t.path+"/foreach", "foreach is given twice: beside listen and inside it; keep the one beside listen")
	case hasOuter:
		return c.compileListenForeach(t, outer, t.path+"/foreach", sc)
	case hasInner:
		return c.compileListenForeach(t, inner, t.path+"/listen/foreach", sc)
	}
	return nil
}

// compileStrategy compiles an event consumption strategy's one, any or all at ptr.
func compileStrategy(to map[string]any, sc scope, ptr, read string) (*listenSpec, error) {
	spec := &listenSpec{read: read}
	var filters []any
	switch {
	case to["one"] != nil:
		spec.mode, filters, ptr = "one", []any{to["one"]}, ptr+"/one"
	case to["any"] != nil:
		spec.mode, ptr = "any", ptr+"/any"
		filters, _ = to["any"].([]any)
		if len(filters) == 0 {
			spec.filters = []eventFilter{{}} // every event
			return spec, nil
		}
	case to["all"] != nil:
		spec.mode, ptr = "all", ptr+"/all"
		filters, _ = to["all"].([]any)
	default:
		return nil, faultAt(ptr, "listen needs to: one, any or all")
	}
	if len(filters) == 0 {
		return nil, faultAt(ptr, "all needs at least one event filter")
	}
	for i, raw := range filters {
		fptr := ptr
		if spec.mode != "one" {
			fptr = fmt.Sprintf("%s/%d", ptr, i)
		}
		f, _ := raw.(map[string]any)
		with, _ := f["with"].(map[string]any)
		typ, _ := with["type"].(string)
		if typ == "" || isStrict(typ) {
			return nil, faultAt(fptr+"/with/type", "cairn needs the event type to listen for, as a literal (the name of the signal that delivers it)")
		}
		if err := workflow.CheckString(fptr+"/with/type", typ, workflow.MaxKeyLength); err != nil {
			return nil, faultAt(fptr+"/with/type", "the event type (the signal's name) must have at most %d bytes, without NUL", workflow.MaxKeyLength)
		}
		ef, err := compileFilter(with, f["correlate"], sc, fptr)
		if err != nil {
			return nil, err
		}
		ef.typ = typ
		spec.filters = append(spec.filters, ef)
	}
	return spec, nil
}

// types are the event types a listen task takes (nil: any, for an empty any), first the first.
func (s *listenSpec) types() []string {
	var out []string
	for _, sp := range []*listenSpec{s, s.untilEvents} {
		if sp == nil {
			continue
		}
		for _, f := range sp.filters {
			if f.typ == "" {
				return nil
			}
			if !slices.Contains(out, f.typ) {
				out = append(out, f.typ)
			}
		}
	}
	return out
}

// waitFor is what the WAIT state of a listen task waits for.
func (s *listenSpec) waitFor() *workflow.WaitFor {
	w := &workflow.WaitFor{DeadlineVariable: varDeadline}
	types := s.types()
	if types == nil {
		w.AnySignal = true
		return w
	}
	w.Signal, w.Signals = types[0], types[1:]
	return w
}

func compileFilter(with map[string]any, correlate any, sc scope, ptr string) (eventFilter, error) {
	ef := eventFilter{attrs: map[string]attrMatch{}}
	for k, v := range with {
		if k == "type" {
			continue
		}
		aptr := ptr + "/with/" + escapePointer(k)
		s, isStr := v.(string)
		switch {
		case isStr && isStrict(s):
			x, err := compileExpr(s, sc, aptr)
			if err != nil {
				return ef, err
			}
			ef.attrs[k] = attrMatch{expr: x}
		case isStr:
			re, err := regexp.Compile("^(?:" + s + ")$")
			if err != nil {
				re = nil // not a regular expression: compared as it is
			}
			ef.attrs[k] = attrMatch{re: re, literal: s}
		default:
			ef.attrs[k] = attrMatch{literal: v}
		}
	}
	if correlate == nil {
		return ef, nil
	}
	cm, ok := correlate.(map[string]any)
	if !ok {
		return ef, faultAt(ptr+"/correlate", "correlate must be an object of correlations (from, expect)")
	}
	names := make([]string, 0, len(cm))
	for k := range cm {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		cptr := ptr + "/correlate/" + escapePointer(name)
		def, _ := cm[name].(map[string]any)
		from, _ := def["from"].(string)
		if from == "" {
			return ef, faultAt(cptr+"/from", "a correlation needs from, an expression on the event")
		}
		x, err := compileExpr(from, sc, cptr+"/from")
		if err != nil {
			return ef, err
		}
		co := correlation{name: name, from: x}
		if e, ok := def["expect"]; ok {
			if s, isStr := e.(string); isStr && !isStrict(s) {
				co.expect = &template{literal: s} // a constant
			} else if co.expect, err = compileTemplate(e, sc, cptr+"/expect"); err != nil {
				return ef, err
			}
		}
		ef.correlate = append(ef.correlate, co)
	}
	return ef, nil
}

// waitsOn reports whether an event may leave the task waiting for another (its state lists
// itself as a next state).
func (s *listenSpec) waitsOn() bool {
	if (s.mode == "all" && len(s.filters) > 1) || s.untilExpr != nil || s.untilEvents != nil || len(s.types()) > 1 {
		return true
	}
	for _, f := range s.filters {
		if len(f.attrs) > 0 || len(f.correlate) > 0 {
			return true
		}
	}
	return false
}

// envelopeOf is a delivered event as a CloudEvent: the payload when it is one, else an event of
// the signal's type whose data is the payload.
func envelopeOf(typ string, payload any) map[string]any {
	if m, ok := payload.(map[string]any); ok && m["specversion"] != nil {
		return m
	}
	return map[string]any{"type": typ, "data": payload}
}

// hear handles one event delivered to listen task t: it is consumed, and the task completes
// when its strategy is satisfied, or waits on.
func (r *run) hear(t *task, in any, ev map[string]any) target {
	spec := t.listenSpec
	st := r.st.Listen
	if st == nil {
		st = &listenState{Matched: make([]bool, len(spec.filters))}
	}
	if u := spec.untilEvents; u != nil {
		if len(st.UntilMatched) != len(u.filters) {
			st.UntilMatched = make([]bool, len(u.filters))
		}
		i, p := r.matchFilter(t, in, u, ev, st, st.UntilMatched)
		if p != nil {
			r.st.Listen = nil
			return r.fault(t, p)
		}
		if i >= 0 {
			st.UntilMatched[i] = true
			if u.mode != "all" || !slices.Contains(st.UntilMatched, false) {
				return r.heard(t, in, st)
			}
			r.st.Listen = st
			return target{leaf: t, again: true}
		}
	}
	i, p := r.matchFilter(t, in, spec, ev, st, st.Matched)
	if p != nil {
		r.st.Listen = nil
		return r.fault(t, p)
	}
	if i < 0 {
		r.st.Listen = st
		return target{leaf: t, again: true} // not for this workflow: listen on
	}
	st.Matched[i] = true
	switch spec.read {
	case "envelope":
		st.Events = append(st.Events, ev)
	case "raw":
		b, _ := json.Marshal(ev["data"])
		st.Events = append(st.Events, string(b))
	default:
		st.Events = append(st.Events, ev["data"])
	}
	done := true
	switch {
	case spec.mode == "all":
		done = !slices.Contains(st.Matched, false)
	case spec.untilExpr != nil:
		v, err := spec.untilExpr.eval(r.ctx, st.Events, r.vars(t, in, nil))
		if err != nil {
			r.st.Listen = nil
			return r.fault(t, expressionProblem(t.path, err))
		}
		done = truthy(v)
	case spec.untilEvents != nil:
		done = false
	}
	if !done {
		r.st.Listen = st
		return target{leaf: t, again: true}
	}
	return r.heard(t, in, st)
}

// heard completes a listen task with the events it took.
func (r *run) heard(t *task, in any, st *listenState) target {
	r.st.Listen = nil
	events := st.Events
	if events == nil {
		events = []any{}
	}
	if t.listenSpec.foreach != nil {
		return r.startForeach(t, in, events)
	}
	return r.complete(t, in, events, t.then)
}

// matchFilter returns the index of the first filter of spec (of the event's type, and in all not
// matched yet) that an event matches, -1 when none does.
func (r *run) matchFilter(t *task, in any, spec *listenSpec, ev map[string]any, st *listenState, matched []bool) (int, *Problem) {
	typ, _ := ev["type"].(string)
	for i, f := range spec.filters {
		if (matched[i] && spec.mode == "all") || (f.typ != "" && f.typ != typ) {
			continue
		}
		ok, p := r.matches(t, in, f, ev, st)
		if p != nil {
			return -1, p
		}
		if ok {
			return i, nil
		}
	}
	return -1, nil
}

// matches checks an event against one filter: its attributes, then its correlations.
func (r *run) matches(t *task, in any, f eventFilter, ev map[string]any, st *listenState) (bool, *Problem) {
	if ok, err := attrsMatch(r.ctx, f, ev, r.vars(t, in, nil)); err != nil || !ok {
		if err != nil {
			return false, expressionProblem(t.path, err)
		}
		return false, nil
	}
	values := map[string]any{}
	for _, c := range f.correlate {
		got, err := c.from.eval(r.ctx, ev, r.vars(t, in, nil))
		if err != nil {
			return false, expressionProblem(t.path, err)
		}
		var want any
		known := true
		if c.expect != nil {
			if want, err = c.expect.eval(r.ctx, in, r.vars(t, in, nil)); err != nil {
				return false, expressionProblem(t.path, err)
			}
		} else {
			want, known = st.Values[c.name]
		}
		if known && !sameJSON(got, want) {
			return false, nil
		}
		values[c.name] = got
	}
	for k, v := range values {
		if st.Values == nil {
			st.Values = map[string]any{}
		}
		st.Values[k] = v
	}
	return true, nil
}

// attrsMatch checks an event's attributes (besides its type) against a filter's.
func attrsMatch(ctx context.Context, f eventFilter, ev map[string]any, vars map[string]any) (bool, error) {
	for k, m := range f.attrs {
		v, present := ev[k]
		switch {
		case m.expr != nil:
			res, err := m.expr.eval(ctx, v, vars)
			if err != nil {
				return false, err
			}
			if !truthy(res) {
				return false, nil
			}
		case !present:
			return false, nil
		case m.re != nil:
			s, isStr := v.(string)
			if !isStr || !m.re.MatchString(s) {
				return false, nil
			}
		default:
			if !sameJSON(v, m.literal) {
				return false, nil
			}
		}
	}
	return true, nil
}

// sameJSON compares two values as JSON (numbers of any Go type alike).
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return reflect.DeepEqual(a, b)
	}
	var na, nb any
	_ = json.Unmarshal(ja, &na)
	_ = json.Unmarshal(jb, &nb)
	return reflect.DeepEqual(na, nb)
}
