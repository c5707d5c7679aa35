package model

import (
	"io"
	"strconv"
	"time"

	"github.com/99designs/gqlgen/graphql"

	"github.com/cairnflow/cairn/workflow"
)

// Time names the Time scalar for gqlgen, bound to time.Time through MarshalTime and UnmarshalTime.
type Time = time.Time

// MarshalTime writes a time as RFC 3339 with nanoseconds, in UTC. Unlike gqlgen's own, it writes
// the zero time too (0001-01-01T00:00:00Z, workflow.MinTime, a time a client may set): a time
// that is not set is a nil pointer, which gqlgen writes as null.
func MarshalTime(t time.Time) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) {
		b := make([]byte, 0, len(time.RFC3339Nano)+2)
		b = append(b, '"')
		b = t.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
		_, _ = w.Write(b)
	})
}

// UnmarshalTime reads a Time argument or input field: an RFC 3339 time in the years 0001 to 9999
// once turned into UTC (workflow.MinTime to workflow.MaxTime), returned in UTC. Anything else is
// an INVALID_INPUT error.
func UnmarshalTime(v any) (time.Time, error) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, &workflow.Error{Code: workflow.CodeInvalidInput, Message: "a Time must be an RFC 3339 string"}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, &workflow.Error{Code: workflow.CodeInvalidInput, Message: "not an RFC 3339 time: " + quote(s)}
	}
	t = t.UTC()
	if err := workflow.CheckTime("", t); err != nil {
		return time.Time{}, err
	}
	return t, nil
}

// quote quotes a client's value for an error message, cut short when long.
func quote(s string) string {
	const max = 64
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}
