package model

import (
	"time"

	"github.com/99designs/gqlgen/graphql"

	"github.com/cairnflow/cairn/workflow"
)

// Time names the Time scalar for gqlgen, bound to time.Time through MarshalTime and UnmarshalTime.
type Time = time.Time

// MarshalTime writes a time as RFC 3339 with nanoseconds, in UTC.
func MarshalTime(t time.Time) graphql.Marshaler { return graphql.MarshalTime(t.UTC()) }

// UnmarshalTime reads an RFC 3339 time; anything else is an INVALID_INPUT error.
func UnmarshalTime(v any) (time.Time, error) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, &workflow.Error{Code: workflow.CodeInvalidInput, Message: "a Time must be an RFC 3339 string"}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, &workflow.Error{Code: workflow.CodeInvalidInput, Message: "not an RFC 3339 time: " + s}
	}
	return t.UTC(), nil
}
