package serverless

import (
	"fmt"
	"sort"
	"strings"

	yamlv3 "sigs.k8s.io/yaml/goyaml.v3"
)

// A misspelt key (thn: end, outptu: {as: .x}) or a key in the wrong object (while: inside for:)
// would otherwise be ignored, and the document would deploy and run as if it were not there. The
// keys of every object of the DSL (1.0.0, as the SDK's model names them) that cairn reads are
// listed here; values of free form (set, with of a function, schemas, inputs) are not checked.

// shape is what an object of the DSL may hold: its keys and the shape of each value (nil: any).
type shape struct {
	what string
	keys map[string]*shape
	// each is the shape of every value of a map of named things (use.functions, use.retries).
	each *shape
	// list is a list of single-key objects, each value of that shape (a task list, switch cases).
	list *shape
	// task marks a task: its common keys and those of its kind.
	task bool
}

func object(what string, keys ...string) *shape {
	s := &shape{what: what, keys: map[string]*shape{}}
	for _, k := range keys {
		s.keys[k] = nil
	}
	return s
}

func (s *shape) with(key string, v *shape) *shape { s.keys[key] = v; return s }

var (
	taskShape     = &shape{what: "task", task: true}
	taskListShape = &shape{what: "task list", list: taskShape}
	schemaShape   = object("schema", "format", "document", "resource")
	timeoutShape  = object("timeout", "after")
	errorShape    = object("error", "type", "status", "instance", "title", "detail")
	retryShape    = object("retry policy", "when", "exceptWhen", "delay").
			with("backoff", object("backoff", "constant", "linear", "exponential")).
			with("limit", object("retry limit", "duration").with("attempt", object("attempt limit", "count", "duration"))).
			with("jitter", object("jitter", "from", "to"))

	// taskCommon are the keys every task may have.
	taskCommon = map[string]*shape{
		"if": nil, "metadata": nil, "then": nil, "timeout": timeoutShape,
		"input":  object("input", "from").with("schema", schemaShape),
		"output": object("output", "as").with("schema", schemaShape),
		"export": object("export", "as").with("schema", schemaShape),
	}
	// taskKinds are the keys of each kind of task, found by the first of taskKindOrder it has.
	taskKindOrder = []string{"call", "run", "fork", "for", "do", "try", "set", "switch", "raise", "wait", "listen", "emit"}
	taskKinds     = map[string]map[string]*shape{
		"run": {"run": object("run", "await", "return", "container").
			with("workflow", object("run: workflow", "namespace", "name", "version", "input")).
			with("shell", object("run: shell", "command", "arguments", "environment", "stdin")).
			with("script", object("run: script", "language", "code", "source", "arguments", "environment", "stdin"))},
		"fork":   {"fork": object("fork", "compete").with("branches", taskListShape)},
		"for":    {"for": object("for", "each", "in", "at"), "while": nil, "do": taskListShape},
		"do":     {"do": taskListShape},
		"try":    {"try": taskListShape, "catch": object("catch", "as", "when", "exceptWhen").with("errors", object("errors", "with")).with("retry", retryShape).with("do", taskListShape)},
		"set":    {"set": nil},
		"switch": {"switch": &shape{what: "switch", list: object("switch case", "when", "then")}},
		"raise":  {"raise": object("raise").with("error", errorShape)},
		"wait":   {"wait": nil},
		"listen": {"listen": object("listen", "to", "read").with("foreach", object("listen foreach", "item", "at", "output", "export").with("do", taskListShape))},
		"emit":   {"emit": object("emit").with("event", object("event", "with"))},
	}
	callWith = map[string]*shape{
		"http":    object("call: http with", "method", "endpoint", "headers", "body", "query", "output", "redirect"),
		"openapi": object("call: openapi with", "document", "operationId", "parameters", "authentication", "output", "redirect"),
		"asyncapi": object("call: asyncapi with", "document", "channel", "operation", "protocol", "authentication").
			with("server", object("asyncapi server", "name", "variables")).
			with("message", object("asyncapi message", "payload", "headers")).
			with("subscription", object("asyncapi subscription", "filter").
				with("consume", object("asyncapi consume", "amount", "for", "while", "until")).
				with("foreach", object("subscription foreach", "item", "at", "output", "export").with("do", taskListShape))),
	}

	documentShape = object("workflow document", "input", "output", "schedule").
			with("document", object("document", "dsl", "namespace", "name", "version", "title", "summary", "tags", "metadata")).
			with("use", object("use", "authentications", "secrets", "catalogs").
				with("extensions", &shape{what: "extensions", list: object("extension", "extend", "when").with("before", taskListShape).with("after", taskListShape)}).
				with("errors", &shape{what: "errors", each: errorShape}).
				with("functions", &shape{what: "functions", each: taskShape}).
				with("retries", &shape{what: "retries", each: retryShape}).
				with("timeouts", &shape{what: "timeouts", each: timeoutShape})).
			with("do", taskListShape).
			with("timeout", timeoutShape).
			with("evaluate", object("evaluate", "language", "mode"))
)

func init() {
	documentShape.keys["input"] = taskCommon["input"]
	documentShape.keys["output"] = taskCommon["output"]
}

// checkKeys refuses the first key, in document order of pointers, that v's shape does not allow.
func checkKeys(v any, s *shape, ptr string) error {
	if s == nil {
		return nil
	}
	switch x := v.(type) {
	case []any:
		if s.list == nil {
			return nil
		}
		for i, item := range x {
			m, ok := item.(map[string]any)
			if !ok {
				continue
			}
			for name, body := range m {
				if err := checkKeys(body, s.list, fmt.Sprintf("%s/%d/%s", ptr, i, escapePointer(name))); err != nil {
					return err
				}
			}
		}
	case map[string]any:
		switch {
		case s.each != nil:
			for _, k := range sortedKeys(x) {
				if err := checkKeys(x[k], s.each, ptr+"/"+escapePointer(k)); err != nil {
					return err
				}
			}
			return nil
		case s.task:
			return checkTask(x, ptr)
		case s.keys == nil:
			return nil
		}
		return checkObject(x, s.keys, s.what, ptr)
	}
	return nil
}

// checkTask checks a task by its kind; a task of no known kind is left to the compiler, which
// refuses it.
func checkTask(m map[string]any, ptr string) error {
	for _, kind := range taskKindOrder {
		if _, ok := m[kind]; !ok {
			continue
		}
		allowed := map[string]*shape{}
		for k, s := range taskCommon {
			allowed[k] = s
		}
		if kind == "call" {
			allowed["call"], allowed["with"] = nil, nil
			if name, ok := m["call"].(string); ok {
				allowed["with"] = callWith[name]
			}
		}
		for k, s := range taskKinds[kind] {
			allowed[k] = s
		}
		return checkObject(m, allowed, kind+" task", ptr)
	}
	return nil
}

func checkObject(m map[string]any, allowed map[string]*shape, what, ptr string) error {
	for _, k := range sortedKeys(m) {
		s, ok := allowed[k]
		if !ok {
			return faultAt(ptr+"/"+escapePointer(k), "unknown key %q in a %s (it may have %s)", k, what, strings.Join(sortedKeys(allowed), ", "))
		}
		if err := checkKeys(m[k], s, ptr+"/"+escapePointer(k)); err != nil {
			return err
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// yaml11Booleans are the plain scalars YAML 1.1, which the document's YAML is read as, takes for
// booleans: as keys they become "true" and "false".
var yaml11Booleans = map[string]bool{
	"y": true, "yes": true, "on": true, "true": true,
	"n": false, "no": false, "off": false, "false": false,
}

// checkBooleanKeys refuses an unquoted key that YAML 1.1 reads as a boolean (n: 1 becomes
// "false": 1). Aliases are not followed; a source that is not YAML is left to the decoder.
func checkBooleanKeys(source []byte) error {
	var root yamlv3.Node
	if yamlv3.Unmarshal(source, &root) != nil {
		return nil
	}
	var walk func(n *yamlv3.Node, ptr string) error
	walk = func(n *yamlv3.Node, ptr string) error {
		switch n.Kind {
		case yamlv3.DocumentNode:
			for _, c := range n.Content {
				if err := walk(c, ptr); err != nil {
					return err
				}
			}
		case yamlv3.SequenceNode:
			for i, c := range n.Content {
				if err := walk(c, fmt.Sprintf("%s/%d", ptr, i)); err != nil {
					return err
				}
			}
		case yamlv3.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				key := k.Value
				if b, isBool := yaml11Booleans[strings.ToLower(k.Value)]; isBool && k.Kind == yamlv3.ScalarNode && k.Style == 0 {
					key = fmt.Sprint(b)
					return faultAt(ptr+"/"+key, "the key %s, unquoted, is a boolean in YAML 1.1 (which documents are read as) and would become %q: quote it ('%s')", k.Value, key, k.Value)
				}
				if err := walk(v, ptr+"/"+escapePointer(key)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(&root, "")
}
