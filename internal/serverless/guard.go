package serverless

import (
	"fmt"
	"strconv"

	"github.com/itchyny/gojq"
)

// Some jq builtins expand a value whose parts are shared into one string or array in a single
// instruction, which the meter cannot stop: [., .] nested 40 times is a few KB, and its tojson
// 2^40 leaves. Before each of them the compiled expression checks its input as JSON against the
// memory budget (guardFunc, given the budget as guardVar), so the expansion never starts.

const (
	guardFunc  = "_cairn_fits"
	indexFunc  = "_cairn_index_fits"
	pathFunc   = "_cairn_path_fits"
	guardVar   = "$__cairn_max_bytes"
	bytesPerAt = 16 // an array element: an interface value
)

// expanding are the builtins, by name and arity, whose output may be as large as their input
// written out as JSON. (transpose and setpath are not bounded by their input's size: see README.)
var expanding = map[string]map[int]bool{
	"tojson": {0: true}, "tostring": {0: true}, "join": {1: true}, "flatten": {0: true, 1: true},
	"add": {0: true}, "ascii_downcase": {0: true}, "ascii_upcase": {0: true}, "implode": {0: true},
}

// guardQuery is `_cairn_fits($__cairn_max_bytes)`.
func guardQuery() *gojq.Query {
	return &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeFunc, Func: &gojq.Func{Name: guardFunc,
		Args: []*gojq.Query{{Term: &gojq.Term{Type: gojq.TermTypeFunc, Func: &gojq.Func{Name: guardVar}}}}}}}
}

// guarded is q piped through the guard: `q | _cairn_fits(...)`.
func guarded(q *gojq.Query) *gojq.Query {
	return &gojq.Query{Left: q, Op: gojq.OpPipe, Right: guardQuery()}
}

// checkedBy is q piped through the guard function fn: `q | fn($__cairn_max_bytes)`.
func checkedBy(q *gojq.Query, fn string) *gojq.Query {
	g := guardQuery()
	g.Term.Func.Name = fn
	return &gojq.Query{Left: q, Op: gojq.OpPipe, Right: g}
}

// guardIndex bounds an index: .[n] = v and setpath([n]; v) fill an array up to n with nulls in one
// instruction (up to 2 GB: gojq refuses only n of 2^27 and more).
func guardIndex(ix *gojq.Index) {
	if ix == nil {
		return
	}
	guardString(ix.Str)
	guardExpanding(ix.Start)
	guardExpanding(ix.End)
	if ix.Start != nil && !ix.IsSlice {
		ix.Start = checkedBy(ix.Start, indexFunc)
	}
}

// guardExpanding puts the guard before every expanding builtin, format (@json, @csv, ...) and
// string interpolation of q.
func guardExpanding(q *gojq.Query) {
	if q == nil {
		return
	}
	for _, fd := range q.FuncDefs {
		guardExpanding(fd.Body)
	}
	guardExpanding(q.Left)
	guardExpanding(q.Right)
	if q.Func != "" && expanding[q.Func][0] {
		name := q.Func
		*q = gojq.Query{Left: guardQuery(), Op: gojq.OpPipe, Right: &gojq.Query{Func: name}}
		return
	}
	guardTerm(q.Term)
}

func guardString(s *gojq.String) {
	if s == nil {
		return
	}
	// The parts of an interpolated string are literals (Term.Str) and \(...) (Term.Query).
	for _, q := range s.Queries {
		guardExpanding(q)
		if q.Term != nil && q.Term.Type == gojq.TermTypeQuery && q.Term.Query != nil {
			q.Term.Query = guarded(q.Term.Query)
		}
	}
}

func guardTerm(t *gojq.Term) {
	if t == nil {
		return
	}
	guardIndex(t.Index)
	if t.Object != nil {
		for _, kv := range t.Object.KeyVals {
			guardString(kv.KeyString)
			guardExpanding(kv.KeyQuery)
			guardExpanding(kv.Val)
		}
	}
	if t.Array != nil {
		guardExpanding(t.Array.Query)
	}
	if t.Unary != nil {
		guardTerm(t.Unary.Term)
	}
	if t.If != nil {
		guardExpanding(t.If.Cond)
		guardExpanding(t.If.Then)
		for _, e := range t.If.Elif {
			guardExpanding(e.Cond)
			guardExpanding(e.Then)
		}
		guardExpanding(t.If.Else)
	}
	if t.Try != nil {
		guardExpanding(t.Try.Body)
		guardExpanding(t.Try.Catch)
	}
	if t.Reduce != nil {
		guardExpanding(t.Reduce.Query)
		guardExpanding(t.Reduce.Start)
		guardExpanding(t.Reduce.Update)
	}
	if t.Foreach != nil {
		guardExpanding(t.Foreach.Query)
		guardExpanding(t.Foreach.Start)
		guardExpanding(t.Foreach.Update)
		guardExpanding(t.Foreach.Extract)
	}
	if t.Label != nil {
		guardExpanding(t.Label.Body)
	}
	guardExpanding(t.Query)
	for _, s := range t.SuffixList {
		guardIndex(s.Index)
		if s.Bind != nil {
			guardExpanding(s.Bind.Body)
		}
	}
	guardString(t.Str)
	switch {
	case t.Type == gojq.TermTypeFunc && expanding[t.Func.Name][len(t.Func.Args)]:
		for _, a := range t.Func.Args {
			guardExpanding(a)
		}
		inner := &gojq.Term{Type: gojq.TermTypeFunc, Func: t.Func}
		*t = gojq.Term{Type: gojq.TermTypeQuery, SuffixList: t.SuffixList,
			Query: &gojq.Query{Left: guardQuery(), Op: gojq.OpPipe, Right: &gojq.Query{Term: inner}}}
	case t.Type == gojq.TermTypeFunc:
		for _, a := range t.Func.Args {
			guardExpanding(a)
		}
		if t.Func.Name == "setpath" && len(t.Func.Args) == 2 {
			t.Func.Args[0] = checkedBy(t.Func.Args[0], pathFunc)
		}
	case t.Type == gojq.TermTypeFormat && t.Str == nil:
		inner := &gojq.Term{Type: gojq.TermTypeFormat, Format: t.Format}
		*t = gojq.Term{Type: gojq.TermTypeQuery, SuffixList: t.SuffixList,
			Query: &gojq.Query{Left: guardQuery(), Op: gojq.OpPipe, Right: &gojq.Query{Term: inner}}}
	}
}

// fits is the guard: its input unchanged, or a BudgetError when the input as JSON is larger than
// the budget.
func fits(v any, args []any) any {
	limit, ok := args[0].(int)
	if !ok || limit <= 0 {
		return v
	}
	if jsonSize(v, int64(limit)) > int64(limit) {
		return &BudgetError{Value: true, Limit: fmt.Sprintf("%d MB", limit>>20)}
	}
	return v
}

// indexFits is its input unchanged, or a BudgetError when it is an array index whose array would
// not fit the budget.
func indexFits(v any, args []any) any {
	limit, ok := args[0].(int)
	if !ok || limit <= 0 {
		return v
	}
	var n float64
	switch x := v.(type) {
	case int:
		n = float64(x)
	case float64:
		n = x
	default:
		return v
	}
	if n*bytesPerAt > float64(limit) {
		return &BudgetError{Index: strconv.FormatFloat(n, 'f', -1, 64), Limit: fmt.Sprintf("%d MB", limit>>20)}
	}
	return v
}

// pathFits checks every index of a path (setpath's first argument) like indexFits.
func pathFits(v any, args []any) any {
	p, ok := v.([]any)
	if !ok {
		return v
	}
	for _, e := range p {
		if r := indexFits(e, args); r != e {
			return r
		}
	}
	return v
}
