package serverless

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/cairnflow/cairn/workflow"
)

// unsupportedTasks are the task types cairn refuses at deploy, with the reason.
var unsupportedTasks = map[string]string{
	"call": "only call: http, call: openapi, call: grpc and call: asyncapi are supported by cairn yet",
	"run":  "run needs exactly one of workflow, shell, script or container",
}

// MaxTasks bounds the tasks of one document (every list, nested ones included), and MaxDepth how
// deeply task lists nest: the SDK's schema validation takes time exponential in the nesting.
const (
	MaxTasks = 300
	MaxDepth = 8
)

// compiler walks a decoded document and builds its program, refusing at the JSON pointer of the
// first fault what cairn cannot run or what does not hold together.
type compiler struct {
	prog     *program
	tasks    int
	depth    int
	errors   map[string]any // use.errors
	retries  map[string]any // use.retries
	timeouts map[string]any // use.timeouts
	// functions are use.functions: a call of a name not among them is served by name (function.go).
	functions map[string]any
	// authentications and catalogs are use.authentications and use.catalogs (auth.go, catalog.go).
	authentications, catalogs map[string]any
	// calling and checked are the functions being compiled and those already checked (function_inline.go).
	calling, checked map[string]bool
	// run is what processes this node allows (run: shell, run: script).
	run RunOptions
}

// decodeSource reads YAML or JSON (JSON is YAML) into plain values and its canonical JSON form.
// Documents are YAML 1.2, as the spec writes them: only true and false are booleans, so on, yes
// or n are strings (decodeYAML).
func decodeSource(source []byte) (map[string]any, []byte, error) {
	js, err := decodeYAML(source)
	if err != nil {
		return nil, nil, faultAt("/", "the document is neither valid YAML nor JSON: %v", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(js, &doc); err != nil || doc == nil {
		return nil, nil, faultAt("/", "the document must be an object")
	}
	canonical, err := json.Marshal(doc)
	if err != nil {
		return nil, nil, faultAt("/", "the document cannot be encoded as JSON: %v", err)
	}
	return doc, canonical, nil
}

func (c *compiler) compileDocument(doc map[string]any) error {
	meta, ok := doc["document"].(map[string]any)
	if !ok {
		return faultAt("/document", "a document needs its `document` object (dsl, namespace, name, version)")
	}
	for _, f := range []string{"dsl", "namespace", "name", "version"} {
		if s, _ := meta[f].(string); s == "" {
			return faultAt("/document/"+f, "document.%s is required and must be a string", f)
		}
	}
	c.prog.typ = meta["namespace"].(string) + "." + meta["name"].(string)
	if len(c.prog.typ) > workflow.MaxKeyLength {
		return faultAt("/document/name", "the type %s.%s is longer than %d bytes", "<namespace>", "<name>", workflow.MaxKeyLength)
	}
	c.prog.label = meta["version"].(string)
	if t, ok := meta["title"].(string); ok {
		c.prog.title = t
	} else if s, ok := meta["summary"].(string); ok {
		c.prog.title = s
	}
	fc, err := compileFlowControl(meta)
	if err != nil {
		return err
	}
	c.prog.flow = fc
	if err := c.compileSchedule(doc); err != nil {
		return err
	}
	if ev, ok := doc["evaluate"].(map[string]any); ok {
		if l, ok := ev["language"].(string); ok && l != "jq" {
			return faultAt("/evaluate/language", "cairn evaluates runtime expressions in jq only, not %q", l)
		}
		if m, ok := ev["mode"].(string); ok && m != "strict" {
			return faultAt("/evaluate/mode", "cairn evaluates runtime expressions in strict mode only (${ }), not %q", m)
		}
	}
	if use, ok := doc["use"].(map[string]any); ok {
		c.errors, _ = use["errors"].(map[string]any)
		c.retries, _ = use["retries"].(map[string]any)
		c.timeouts, _ = use["timeouts"].(map[string]any)
		c.functions, _ = use["functions"].(map[string]any)
		c.authentications, _ = use["authentications"].(map[string]any)
		c.catalogs, _ = use["catalogs"].(map[string]any)
		if ext, ok := use["extensions"]; ok {
			if err := c.compileExtensions(ext); err != nil {
				return err
			}
		}
	}
	root := &task{name: "", path: "", kind: kindRoot}
	if v, ok := doc["timeout"]; ok {
		var err error
		if root.timeout, err = c.compileTimeout(v, "/timeout"); err != nil {
			return err
		}
	}
	c.prog.doc = doc
	sc := scope(argsTask).with()
	if err := compileData(root, doc, scope(argsWorkflowInput).with(), scope(argsWorkflowOutput).with(), ""); err != nil {
		return err
	}
	body, err := c.compileList(doc["do"], "/do", root, sc)
	if err != nil {
		return err
	}
	root.body = body
	c.prog.root = root
	return nil
}

// compileData compiles the input and output of a task or of the document: from, as, schema. Its
// input.from sees the arguments of scope in, its output.as those of out.
func compileData(t *task, def map[string]any, in, out scope, ptr string) error {
	var err error
	if i, ok := def["input"].(map[string]any); ok {
		if from, ok := i["from"]; ok {
			if t.inputFrom, err = compileValueOrExpr(from, in, ptr+"/input/from"); err != nil {
				return err
			}
		}
		if s, ok := i["schema"]; ok {
			if t.inputSchema, err = compileSchema(s, ptr+"/input/schema"); err != nil {
				return err
			}
		}
	}
	if o, ok := def["output"].(map[string]any); ok {
		if as, ok := o["as"]; ok {
			if t.outputAs, err = compileValueOrExpr(as, out, ptr+"/output/as"); err != nil {
				return err
			}
		}
		if s, ok := o["schema"]; ok {
			if t.outputSchema, err = compileSchema(s, ptr+"/output/schema"); err != nil {
				return err
			}
		}
	}
	return nil
}

// compileList compiles one list of tasks.
func (c *compiler) compileList(raw any, ptr string, owner *task, sc scope) (*taskList, error) {
	items, ok := raw.([]any)
	if !ok || len(items) == 0 {
		return nil, faultAt(ptr, "must be a non-empty list of tasks")
	}
	if c.depth++; c.depth > MaxDepth {
		return nil, faultAt(ptr, "task lists may nest at most %d deep", MaxDepth)
	}
	defer func() { c.depth-- }()
	l := &taskList{path: ptr, owner: owner}
	for i, item := range items {
		m, ok := item.(map[string]any)
		if !ok || len(m) != 1 {
			return nil, faultAt(fmt.Sprintf("%s/%d", ptr, i), "each item must be an object with exactly one key, the task's name")
		}
		for name, body := range m {
			tptr := fmt.Sprintf("%s/%d/%s", ptr, i, escapePointer(name))
			if c.tasks++; c.tasks > MaxTasks {
				return nil, faultAt(tptr, "a document may have at most %d tasks", MaxTasks)
			}
			if name == "" || strings.ContainsRune(name, 0) || len(name) > 200 {
				return nil, faultAt(tptr, "a task name must be 1 to 200 bytes without NUL characters")
			}
			if len(tptr)+len(awaitSuffix) > workflow.MaxKeyLength {
				return nil, faultAt(tptr, "a task's path (its state's name) may have at most %d bytes", workflow.MaxKeyLength-len(awaitSuffix))
			}
			if l.byName(name) != nil {
				return nil, faultAt(tptr, "task name %q is used twice in the same list", name)
			}
			def, ok := body.(map[string]any)
			if !ok {
				return nil, faultAt(tptr, "task %q must be an object", name)
			}
			t, err := c.compileTask(name, tptr, def, sc)
			if err != nil {
				return nil, err
			}
			t.list, t.index = l, i
			l.tasks = append(l.tasks, t)
		}
	}
	for _, t := range l.tasks {
		if err := checkThen(l, t.then, t.path+"/then"); err != nil {
			return nil, err
		}
		for i, cs := range t.cases {
			if err := checkThen(l, cs.then, fmt.Sprintf("%s/switch/%d/%s/then", t.path, i, escapePointer(cs.name))); err != nil {
				return nil, err
			}
		}
	}
	return l, nil
}

func isRunWorkflow(v any) bool {
	m, ok := v.(map[string]any)
	return ok && m["workflow"] != nil && m["container"] == nil && m["script"] == nil && m["shell"] == nil
}

// compileTask compiles one task with what all tasks share (if, input, output, export, then).
func (c *compiler) compileTask(name, ptr string, def map[string]any, sc scope) (*task, error) {
	t := &task{name: name, path: ptr, def: def}
	for key, reason := range unsupportedTasks {
		if v, ok := def[key]; ok && !(key == "call" && (v == "http" || v == "openapi" || v == "grpc" || v == "asyncapi" || c.isFunctionCall(v))) && !(key == "run" && (isRunWorkflow(v) || isRunProcess(v))) {
			what := key
			if s, ok := v.(string); ok {
				what = key + ": " + s
			} else if m, ok := v.(map[string]any); ok {
				for k := range m {
					what = key + ": " + k
				}
			}
			return nil, faultAt(ptr+"/"+key, "task %q (%s): %s", name, what, reason)
		}
	}
	if v, ok := def["timeout"]; ok {
		var err error
		if t.timeout, err = c.compileTimeout(v, ptr+"/timeout"); err != nil {
			return nil, err
		}
	}
	// if and input.from are evaluated on the raw input, before the task has its $input.
	before := sc.without("$input", "$authorization")
	if s, ok := def["if"].(string); ok {
		x, err := compileExpr(s, before, ptr+"/if")
		if err != nil {
			return nil, err
		}
		t.cond = x
	}
	var err error
	if err := compileData(t, def, before, sc, ptr); err != nil {
		return nil, err
	}
	if ex, ok := def["export"].(map[string]any); ok {
		if as, ok := ex["as"]; ok {
			if t.exportAs, err = compileValueOrExpr(as, sc.with("$output"), ptr+"/export/as"); err != nil {
				return nil, err
			}
		}
		if s, ok := ex["schema"]; ok {
			if t.exportSchema, err = compileSchema(s, ptr+"/export/schema"); err != nil {
				return nil, err
			}
		}
	}
	if v, ok := def["then"]; ok {
		s, isStr := v.(string)
		if !isStr || s == "" {
			return nil, faultAt(ptr+"/then", "then must be continue, exit, end or a task's name")
		}
		t.then = s
	}
	switch {
	case def["call"] == "http":
		t.kind = kindCall
		return t, c.compileHTTP(t, def, sc)
	case def["call"] == "openapi":
		return t, c.compileOpenAPI(t, def, sc)
	case def["call"] == "grpc":
		return t, c.compileGRPC(t, def, sc)
	case def["call"] == "asyncapi":
		return t, c.compileAsyncAPI(t, def, sc)
	case c.isFunctionCall(def["call"]):
		return t, c.compileFunctionCall(t, def, sc)
	case isRunProcess(def["run"]):
		return t, c.compileRunProcess(t, def["run"].(map[string]any), sc)
	case def["run"] != nil:
		return t, c.compileRunWorkflow(t, def["run"].(map[string]any), sc)
	case def["fork"] != nil:
		return t, c.compileFork(t, def, sc)
	case def["for"] != nil:
		return t, c.compileFor(t, def, sc)
	case def["do"] != nil:
		t.kind = kindDo
		t.body, err = c.compileList(def["do"], ptr+"/do", t, sc)
		return t, err
	case def["try"] != nil:
		return t, c.compileTry(t, def, sc)
	case def["set"] != nil:
		t.kind = kindSet
		if _, ok := def["set"].(map[string]any); !ok {
			if s, ok := def["set"].(string); !ok || !isStrict(s) {
				return nil, faultAt(ptr+"/set", "set must be an object or a runtime expression")
			}
		}
		t.set, err = compileTemplate(def["set"], sc, ptr+"/set")
		return t, err
	case def["switch"] != nil:
		return t, c.compileSwitch(t, def["switch"], sc)
	case def["raise"] != nil:
		return t, c.compileRaise(t, def["raise"], sc)
	case def["wait"] != nil:
		t.kind = kindWait
		t.wait, err = parseDuration(def["wait"], ptr+"/wait")
		return t, err
	case def["listen"] != nil:
		return t, c.compileListen(t, def["listen"], sc)
	case def["emit"] != nil:
		t.kind = kindEmit
		ev, _ := def["emit"].(map[string]any)
		event, _ := ev["event"].(map[string]any)
		with, ok := event["with"].(map[string]any)
		if !ok {
			return nil, faultAt(ptr+"/emit/event/with", "emit needs event.with, the event's properties")
		}
		if s, _ := with["type"].(string); s == "" {
			return nil, faultAt(ptr+"/emit/event/with/type", "an emitted event needs a type")
		}
		t.emit, err = compileTemplate(with, sc, ptr+"/emit/event/with")
		return t, err
	}
	return nil, faultAt(ptr, "task %q has no task type cairn knows (set, switch, for, fork, do, try, raise, wait, listen, emit, call, run)", name)
}

func (c *compiler) compileFor(t *task, def map[string]any, sc scope) error {
	t.kind = kindFor
	spec, ok := def["for"].(map[string]any)
	if !ok {
		return faultAt(t.path+"/for", "for must be an object with each, in and at")
	}
	in, _ := spec["in"].(string)
	if in == "" {
		return faultAt(t.path+"/for/in", "for.in is required: the expression of the collection")
	}
	var err error
	if t.forIn, err = compileExpr(in, sc, t.path+"/for/in"); err != nil {
		return err
	}
	t.forEach, t.forAt = "item", "index"
	if s, ok := spec["each"].(string); ok && s != "" {
		t.forEach = s
	}
	if s, ok := spec["at"].(string); ok && s != "" {
		t.forAt = s
	}
	inner := sc.with(t.forEach, t.forAt)
	if w, ok := def["while"].(string); ok {
		if t.while, err = compileExpr(w, inner, t.path+"/while"); err != nil {
			return err
		}
	}
	t.body, err = c.compileList(def["do"], t.path+"/do", t, inner)
	return err
}

func (c *compiler) compileTry(t *task, def map[string]any, sc scope) error {
	t.kind = kindTry
	var err error
	if t.body, err = c.compileList(def["try"], t.path+"/try", t, sc); err != nil {
		return err
	}
	raw, ok := def["catch"].(map[string]any)
	if !ok {
		return faultAt(t.path+"/catch", "a try task needs a catch")
	}
	ct := &catchSpec{as: "error"}
	if s, ok := raw["as"].(string); ok && s != "" {
		ct.as = s
	}
	if errs, ok := raw["errors"].(map[string]any); ok {
		ct.filter, _ = errs["with"].(map[string]any)
	}
	inner := sc.with(ct.as)
	if s, ok := raw["when"].(string); ok {
		if ct.when, err = compileExpr(s, inner, t.path+"/catch/when"); err != nil {
			return err
		}
	}
	if s, ok := raw["exceptWhen"].(string); ok {
		if ct.exceptWhen, err = compileExpr(s, inner, t.path+"/catch/exceptWhen"); err != nil {
			return err
		}
	}
	if r, ok := raw["retry"]; ok {
		if ct.retry, err = c.compileRetry(r, inner, t.path+"/catch/retry"); err != nil {
			return err
		}
	}
	if d, ok := raw["do"]; ok {
		if ct.do, err = c.compileList(d, t.path+"/catch/do", t, inner); err != nil {
			return err
		}
		ct.do.catch = true
	}
	t.catch = ct
	return nil
}

func (c *compiler) compileRetry(raw any, sc scope, ptr string) (*retrySpec, error) {
	if ref, ok := raw.(string); ok {
		def, ok := c.retries[ref]
		if !ok {
			return nil, faultAt(ptr, "retry policy %q is not defined in use.retries", ref)
		}
		raw, ptr = def, "/use/retries/"+escapePointer(ref)
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, faultAt(ptr, "a retry policy must be an object or the name of one in use.retries")
	}
	r := &retrySpec{backoff: "constant", maxRetries: -1}
	var err error
	if s, ok := m["when"].(string); ok {
		if r.when, err = compileExpr(s, sc, ptr+"/when"); err != nil {
			return nil, err
		}
	}
	if s, ok := m["exceptWhen"].(string); ok {
		if r.exceptWhen, err = compileExpr(s, sc, ptr+"/exceptWhen"); err != nil {
			return nil, err
		}
	}
	if d, ok := m["delay"]; ok {
		if r.delay, err = parseDuration(d, ptr+"/delay"); err != nil {
			return nil, err
		}
	}
	if b, ok := m["backoff"].(map[string]any); ok {
		for k := range b {
			switch k {
			case "constant", "linear", "exponential":
				r.backoff = k
			default:
				return nil, faultAt(ptr+"/backoff/"+escapePointer(k), "unknown backoff %q (constant, linear or exponential)", k)
			}
		}
	}
	if lim, ok := m["limit"].(map[string]any); ok {
		if a, ok := lim["attempt"].(map[string]any); ok {
			if n, ok := a["count"].(float64); ok {
				if err := workflow.CheckRetryAttempts(ptr+"/limit/attempt/count", int(min(n, 1<<31))); err != nil {
					return nil, err
				}
				r.maxRetries = int(n)
			}
		}
		if d, ok := lim["duration"]; ok {
			if r.limit, err = parseDuration(d, ptr+"/limit/duration"); err != nil {
				return nil, err
			}
		}
	}
	if j, ok := m["jitter"].(map[string]any); ok {
		if r.jitterFrom, err = parseDuration(j["from"], ptr+"/jitter/from"); err != nil {
			return nil, err
		}
		if r.jitterTo, err = parseDuration(j["to"], ptr+"/jitter/to"); err != nil {
			return nil, err
		}
	}
	if r.maxRetries < 0 && r.limit == 0 {
		return nil, faultAt(ptr+"/limit", "a retry policy needs a limit (limit.attempt.count or limit.duration): cairn refuses endless retries")
	}
	return r, nil
}

func (c *compiler) compileSwitch(t *task, raw any, sc scope) error {
	t.kind = kindSwitch
	items, ok := raw.([]any)
	if !ok || len(items) == 0 {
		return faultAt(t.path+"/switch", "switch must be a non-empty list of cases")
	}
	for i, item := range items {
		m, ok := item.(map[string]any)
		if !ok || len(m) != 1 {
			return faultAt(fmt.Sprintf("%s/switch/%d", t.path, i), "each case must be an object with exactly one key, the case's name")
		}
		for name, body := range m {
			ptr := fmt.Sprintf("%s/switch/%d/%s", t.path, i, escapePointer(name))
			def, _ := body.(map[string]any)
			cs := switchCase{name: name}
			cs.then, _ = def["then"].(string)
			if cs.then == "" {
				return faultAt(ptr+"/then", "case %q needs then", name)
			}
			if w, ok := def["when"].(string); ok {
				x, err := compileExpr(w, sc, ptr+"/when")
				if err != nil {
					return err
				}
				cs.when = x
			}
			t.cases = append(t.cases, cs)
		}
	}
	return nil
}

func (c *compiler) compileRaise(t *task, raw any, sc scope) error {
	t.kind = kindRaise
	m, _ := raw.(map[string]any)
	e, ok := m["error"]
	if !ok {
		return faultAt(t.path+"/raise/error", "raise needs an error")
	}
	ptr := t.path + "/raise/error"
	if ref, ok := e.(string); ok {
		def, ok := c.errors[ref]
		if !ok {
			return faultAt(ptr, "error %q is not defined in use.errors", ref)
		}
		e, ptr = def, "/use/errors/"+escapePointer(ref)
	}
	em, ok := e.(map[string]any)
	if !ok {
		return faultAt(ptr, "an error must be an object (type, status, title, detail) or the name of one in use.errors")
	}
	if s, _ := em["type"].(string); s == "" {
		return faultAt(ptr+"/type", "an error needs a type")
	}
	if _, ok := em["status"]; !ok {
		return faultAt(ptr+"/status", "an error needs a status")
	}
	var err error
	t.raise, err = compileTemplate(em, sc, ptr)
	return err
}

var isoDuration = regexp.MustCompile(`^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$`)

// MaxDuration bounds every duration of a document (wait, timeouts, retry delays, limits and
// jitter): past about 292 years a time.Duration overflows, and a wait of 106752 days ended at once.
const MaxDuration = 3650 * 24 * time.Hour

// parseDuration reads an ISO 8601 duration (PT1S) or an inline one ({seconds: 1}), refusing one
// longer than MaxDuration. Its parts are added in nanoseconds as floats, which cannot overflow.
func parseDuration(v any, ptr string) (time.Duration, error) {
	var nanos float64
	switch d := v.(type) {
	case string:
		m := isoDuration.FindStringSubmatch(d)
		if m == nil || d == "P" || d == "PT" {
			return 0, faultAt(ptr, "%q is not an ISO 8601 duration (like PT5S)", d)
		}
		for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second} {
			if m[i+1] == "" {
				continue
			}
			n, err := strconv.ParseFloat(m[i+1], 64)
			if err != nil {
				return 0, faultAt(ptr, "%q is not an ISO 8601 duration: %v", d, err)
			}
			nanos += n * float64(unit)
		}
	case map[string]any:
		units := map[string]time.Duration{"days": 24 * time.Hour, "hours": time.Hour, "minutes": time.Minute, "seconds": time.Second, "milliseconds": time.Millisecond}
		for k, n := range d {
			u, ok := units[k]
			f, isNum := n.(float64)
			if !ok || !isNum || f < 0 {
				return 0, faultAt(ptr+"/"+escapePointer(k), "a duration has days, hours, minutes, seconds and milliseconds as numbers")
			}
			nanos += f * float64(u)
		}
	default:
		return 0, faultAt(ptr, "a duration is an ISO 8601 string or an object of days, hours, minutes, seconds, milliseconds")
	}
	if nanos > float64(MaxDuration) {
		return 0, faultAt(ptr, "the duration is longer than the maximum of %d days", int(MaxDuration.Hours()/24))
	}
	return time.Duration(nanos), nil
}
