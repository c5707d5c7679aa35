package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cairnflow/cairn/graph"
)

// codeComplexityLimit is the code of a query that costs more than Config.ComplexityLimit (the
// same as gqlgen's own complexity limit).
const codeComplexityLimit = "COMPLEXITY_LIMIT_EXCEEDED"

func init() {
	errcode.RegisterErrorType(codeComplexityLimit, errcode.KindProtocol)
}

// costLimit refuses operations that cost more than max. A field costs 1 plus its children unless
// the schema's complexity functions (graph's setComplexity) say otherwise; the items of a connection
// (edges, nodes) cost their cost times the page size asked for, while its totalCount and pageInfo
// are paid once. It walks an operation that documentLimits already bounded, so the walk is short.
type costLimit struct {
	max int
	es  graphql.ExecutableSchema
}

var (
	_ graphql.HandlerExtension        = (*costLimit)(nil)
	_ graphql.OperationContextMutator = (*costLimit)(nil)
)

// ExtensionName names the extension for gqlgen.
func (*costLimit) ExtensionName() string { return "CostLimit" }

// Validate keeps the schema whose complexity functions price the fields.
func (c *costLimit) Validate(es graphql.ExecutableSchema) error {
	if c.max <= 0 {
		return fmt.Errorf("complexity limit must be positive, not %d", c.max)
	}
	c.es = es
	return nil
}

// MutateOperationContext prices the operation before it runs.
func (c *costLimit) MutateOperationContext(ctx context.Context, op *graphql.OperationContext) *gqlerror.Error {
	if op.Operation == nil {
		return nil
	}
	if ctx.Err() != nil {
		return limitError(codeComplexityLimit, "the request was cancelled")
	}
	w := costWalker{ctx: ctx, es: c.es, schema: c.es.Schema(), vars: op.Variables}
	if cost := w.set(op.Operation.SelectionSet, 0); cost > c.max {
		return limitError(codeComplexityLimit, "the operation costs %d; at most %d is allowed", cost, c.max)
	}
	return nil
}

type costWalker struct {
	ctx    context.Context
	es     graphql.ExecutableSchema
	schema *ast.Schema
	vars   map[string]any
}

// set prices a selection set; page > 0 when it is a connection's, whose edges and nodes are
// bought page times.
func (w costWalker) set(set ast.SelectionSet, page int) int {
	total := 0
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			c := w.field(s)
			if page > 0 && (s.Name == "edges" || s.Name == "nodes") {
				c = satMul(c, page)
			}
			total = satAdd(total, c)
		case *ast.InlineFragment:
			total = satAdd(total, w.set(s.SelectionSet, page))
		case *ast.FragmentSpread:
			if s.Definition != nil {
				total = satAdd(total, w.set(s.Definition.SelectionSet, page))
			}
		}
	}
	return total
}

func (w costWalker) field(f *ast.Field) int {
	if strings.HasPrefix(f.Name, "__") || f.Definition == nil || f.ObjectDefinition == nil {
		return 1 // introspection is cheap; it is bounded by the document limits
	}
	args := f.ArgumentMap(w.vars)
	child := 0
	if t := w.schema.Types[f.Definition.Type.Name()]; t != nil && len(f.SelectionSet) > 0 {
		page := 0
		if strings.HasSuffix(t.Name, "Connection") {
			page = max(graph.PageSize(intArg(args, "first"), intArg(args, "last")), 1)
		}
		child = w.set(f.SelectionSet, page)
	}
	if c, ok := w.es.Complexity(w.ctx, f.ObjectDefinition.Name, f.Name, child, args); ok && c >= 1 {
		return c
	}
	return satAdd(1, child)
}

// intArg reads an Int argument, whether written inline or passed as a variable.
func intArg(args map[string]any, name string) *int {
	var n int
	switch v := args[name].(type) {
	case int:
		n = v
	case int64:
		n = int(v)
	case float64:
		n = int(v)
	case json.Number:
		i, err := v.Int64()
		if err != nil {
			return nil
		}
		n = int(i)
	default:
		return nil
	}
	return &n
}

const maxCost = int(^uint(0) >> 1)

// satAdd adds costs, saturating instead of overflowing.
func satAdd(a, b int) int {
	if a > maxCost-b {
		return maxCost
	}
	return a + b
}

// satMul multiplies a cost by a count, saturating instead of overflowing.
func satMul(c, n int) int {
	if n != 0 && c > maxCost/n {
		return maxCost
	}
	return c * n
}
