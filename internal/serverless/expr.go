package serverless

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/itchyny/gojq"
)

// scope is the set of variables an expression at some place of a document may use: the runtime
// arguments plus the names that enclosing `for` and `catch` tasks bind.
type scope []string

func (s scope) with(names ...string) scope {
	out := append(scope{}, s...)
	for _, n := range names {
		if n != "" && !strings.HasPrefix(n, "$") {
			n = "$" + n
		}
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// without is the scope less some arguments.
func (s scope) without(names ...string) scope {
	var out scope
	for _, n := range s {
		if !slices.Contains(names, n) {
			out = append(out, n)
		}
	}
	return out
}

// expr is a jq expression compiled at deploy time with the variables of its scope.
type expr struct {
	src  string
	vars []string
	uses []bool // the variables the expression names: only those are computed for it
	code *gojq.Code
}

// isStrict reports whether a string is a runtime expression in the ${ ... } form.
func isStrict(s string) bool {
	t := strings.TrimSpace(s)
	return strings.HasPrefix(t, "${") && strings.HasSuffix(t, "}")
}

// compileExpr compiles a jq expression, with or without its ${ } enclosure. A fault is reported at
// pointer ptr, so an undefined variable or a syntax error is refused at deploy.
func compileExpr(src string, sc scope, ptr string) (*expr, error) {
	q := strings.TrimSpace(src)
	if isStrict(q) {
		q = strings.TrimSpace(q[2 : len(q)-1])
	}
	parsed, err := gojq.Parse(q)
	if err != nil {
		return nil, faultAt(ptr, "invalid jq expression %q: %v", src, err)
	}
	guardExpanding(parsed)
	vars := append(append([]string{}, sc...), guardVar)
	code, err := gojq.Compile(parsed, gojq.WithVariables(vars), gojq.WithFunction(guardFunc, 1, 1, fits),
		gojq.WithFunction(indexFunc, 1, 1, indexFits), gojq.WithFunction(pathFunc, 1, 1, pathFits))
	if err != nil {
		return nil, faultAt(ptr, "invalid jq expression %q: %v", src, err)
	}
	uses := make([]bool, len(vars))
	for i, n := range vars {
		uses[i] = usesArg(q, n)
	}
	return &expr{src: src, vars: vars, uses: uses, code: code}, nil
}

// eval runs an expression on input with the variables by name; it yields its first value (null
// when it yields none).
func (x *expr) eval(ctx context.Context, input any, vars map[string]any) (any, error) {
	args := make([]any, len(x.vars))
	for i, n := range x.vars {
		if !x.uses[i] {
			continue
		}
		args[i] = vars[n]
		if f, ok := args[i].(lazyArg); ok {
			args[i] = f()
		}
	}
	args[len(args)-1] = int(budgetOf(ctx).MaxBytes)
	// Within the step's context and the node's budget: an expression that runs past either, or
	// grows the heap past its budget, is stopped.
	return evalWithin(ctx, func(ctx context.Context) (any, error) {
		v, ok := x.code.RunWithContext(ctx, input, args...).Next()
		if !ok {
			return nil, nil
		}
		if err, isErr := v.(error); isErr {
			return nil, fmt.Errorf("expression %q failed: %w", x.src, err)
		}
		return v, nil
	})
}

// template is a value in which strings of the form ${ ... } are runtime expressions (a set task's
// object, an event's properties, an error's fields); everything else is literal.
type template struct {
	literal any
	expr    *expr
	object  map[string]*template
	array   []*template
}

// compileTemplate compiles the expressions inside a value.
func compileTemplate(v any, sc scope, ptr string) (*template, error) {
	switch t := v.(type) {
	case string:
		if isStrict(t) {
			x, err := compileExpr(t, sc, ptr)
			if err != nil {
				return nil, err
			}
			return &template{expr: x}, nil
		}
		return &template{literal: t}, nil
	case map[string]any:
		out := &template{object: map[string]*template{}}
		for k, child := range t {
			c, err := compileTemplate(child, sc, ptr+"/"+escapePointer(k))
			if err != nil {
				return nil, err
			}
			out.object[k] = c
		}
		return out, nil
	case []any:
		out := &template{array: make([]*template, len(t))}
		for i, child := range t {
			c, err := compileTemplate(child, sc, fmt.Sprintf("%s/%d", ptr, i))
			if err != nil {
				return nil, err
			}
			out.array[i] = c
		}
		return out, nil
	default:
		return &template{literal: v}, nil
	}
}

// compileValueOrExpr compiles a field that is either a runtime expression (a string, with or
// without ${ }) or an object holding expressions: input.from, output.as, export.as.
func compileValueOrExpr(v any, sc scope, ptr string) (*template, error) {
	if s, ok := v.(string); ok {
		x, err := compileExpr(s, sc, ptr)
		if err != nil {
			return nil, err
		}
		return &template{expr: x}, nil
	}
	return compileTemplate(v, sc, ptr)
}

// eval evaluates a template on input.
func (t *template) eval(ctx context.Context, input any, vars map[string]any) (any, error) {
	switch {
	case t.expr != nil:
		return t.expr.eval(ctx, input, vars)
	case t.object != nil:
		out := make(map[string]any, len(t.object))
		for k, c := range t.object {
			v, err := c.eval(ctx, input, vars)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	case t.array != nil:
		out := make([]any, len(t.array))
		for i, c := range t.array {
			v, err := c.eval(ctx, input, vars)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	default:
		return t.literal, nil
	}
}

// escapePointer escapes a key for a JSON pointer (RFC 6901).
func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}
