package graph

import (
	"context"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// inputFieldOf names the argument or input field that an error in reading a field's arguments is
// about (a scalar refusing a value), as extensions.field names fields everywhere else: gqlgen puts
// the error at the field's response path followed by the argument's path, and the name is what
// follows the response path, without a mutation's one "input" argument. So "startAt",
// "workflows[1].startAt", "filter.createdAfter", "ids[2]"; "" for errors of the field itself.
func inputFieldOf(ctx context.Context, path ast.Path) string {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil {
		return ""
	}
	base := fc.Path()
	if len(path) <= len(base) {
		return ""
	}
	for i := range base {
		if base[i] != path[i] {
			return ""
		}
	}
	rest := path[len(base):]
	if len(rest) > 1 && rest[0] == ast.PathName("input") {
		rest = rest[1:]
	}
	var b strings.Builder
	for _, el := range rest {
		switch el := el.(type) {
		case ast.PathIndex:
			b.WriteString("[" + strconv.Itoa(int(el)) + "]")
		case ast.PathName:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(string(el))
		}
	}
	return b.String()
}
