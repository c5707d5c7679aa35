package model

import (
	"math"
	"strconv"

	"github.com/99designs/gqlgen/graphql"

	"github.com/cairnflow/cairn/workflow"
)

// Int names GraphQL's Int scalar for gqlgen, bound to int through MarshalInt and UnmarshalInt.
type Int = int

// MarshalInt writes an int.
func MarshalInt(n int) graphql.Marshaler { return graphql.MarshalInt(n) }

// UnmarshalInt reads an Int argument or input field. GraphQL's Int is a signed 32-bit integer:
// anything outside that range (which the query validator lets through) is an INVALID_INPUT error.
func UnmarshalInt(v any) (int, error) {
	n, err := graphql.UnmarshalInt64(v)
	if err != nil {
		return 0, &workflow.Error{Code: workflow.CodeInvalidInput, Message: "not an Int"}
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		return 0, &workflow.Error{Code: workflow.CodeInvalidInput,
			Message: "an Int is a 32-bit integer, from -2147483648 to 2147483647, not " + strconv.FormatInt(n, 10)}
	}
	return int(n), nil
}
