package persistence

import (
	"github.com/uptrace/bun"
)

// AttributeOp is the comparison of an attribute filter.
type AttributeOp string

// The comparisons of attribute filters.
const (
	AttributeEq     AttributeOp = "eq"
	AttributeIn     AttributeOp = "in"
	AttributeGt     AttributeOp = "gt"
	AttributeGte    AttributeOp = "gte"
	AttributeLt     AttributeOp = "lt"
	AttributeLte    AttributeOp = "lte"
	AttributePrefix AttributeOp = "prefix"
)

// prefixEnd follows every string that begins with a prefix and is no longer than the prefix plus
// this: the highest code point. A prefix filter is the range [prefix, prefix+prefixEnd), which an
// index on the value serves on every database (strings compare byte by byte, or code point by code
// point, which orders UTF-8 the same).
const prefixEnd = "\U0010FFFF"

// AttributeFilter keeps the workflows whose attribute Name compares with Values (one value, a list
// for in, the prefix as a string value for prefix) as Op says. Kind is the kind of the name's
// values; an empty Kind (a name never used) matches nothing. Values have that kind (the caller
// checks it).
type AttributeFilter struct {
	Name   string
	Kind   AttributeKind
	Op     AttributeOp
	Values []AttributeValue
}

// column is the column that holds values of the filter's kind, and the value as it is bound.
func (a AttributeFilter) column() string {
	switch a.Kind {
	case AttributeString:
		return "wa.s"
	case AttributeTime:
		return "wa.t"
	default:
		return "wa.n"
	}
}

func bindAttribute(v AttributeValue) any {
	switch v.Kind {
	case AttributeString:
		return v.S
	case AttributeNumber:
		return v.N
	case AttributeBoolean:
		if v.B {
			return 1.0
		}
		return 0.0
	default:
		return UTC(v.T)
	}
}

// apply adds the filter to a query on workflows (alias w): a semi-join on the attribute's index.
func (a AttributeFilter) apply(q *bun.SelectQuery) *bun.SelectQuery {
	if a.Kind == "" || len(a.Values) == 0 {
		return q.Where("1 = 0")
	}
	col := a.column()
	const sub = "w.id IN (SELECT wa.workflow_id FROM workflow_attributes AS wa WHERE wa.name = ? AND "
	v := bindAttribute(a.Values[0])
	switch a.Op {
	case AttributeIn:
		vs := make([]any, len(a.Values))
		for i, x := range a.Values {
			vs[i] = bindAttribute(x)
		}
		return q.Where(sub+col+" IN (?))", a.Name, bun.List(vs))
	case AttributeGt:
		return q.Where(sub+col+" > ?)", a.Name, v)
	case AttributeGte:
		return q.Where(sub+col+" >= ?)", a.Name, v)
	case AttributeLt:
		return q.Where(sub+col+" < ?)", a.Name, v)
	case AttributeLte:
		return q.Where(sub+col+" <= ?)", a.Name, v)
	case AttributePrefix:
		return q.Where(sub+col+" >= ? AND "+col+" < ?)", a.Name, a.Values[0].S, a.Values[0].S+prefixEnd)
	default:
		return q.Where(sub+col+" = ?)", a.Name, v)
	}
}

// matches is apply in memory, on a workflow's attributes.
func (a AttributeFilter) matches(attrs map[string]AttributeValue) bool {
	got, ok := attrs[a.Name]
	if !ok || a.Kind == "" || got.Kind != a.Kind || len(a.Values) == 0 {
		return false
	}
	c := got.Compare(a.Values[0])
	switch a.Op {
	case AttributeIn:
		for _, v := range a.Values {
			if got.Compare(v) == 0 {
				return true
			}
		}
		return false
	case AttributeGt:
		return c > 0
	case AttributeGte:
		return c >= 0
	case AttributeLt:
		return c < 0
	case AttributeLte:
		return c <= 0
	case AttributePrefix:
		return got.S >= a.Values[0].S && got.S < a.Values[0].S+prefixEnd
	default:
		return c == 0
	}
}

// matchAttributes reports whether attributes pass every filter.
func matchAttributes(fs []AttributeFilter, attrs map[string]AttributeValue) bool {
	for _, f := range fs {
		if !f.matches(attrs) {
			return false
		}
	}
	return true
}
