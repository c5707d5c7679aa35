package model

import (
	"encoding/json"
	"io"

	"github.com/99designs/gqlgen/graphql"

	"github.com/cairnflow/cairn/workflow"
)

// JSON names the JSON scalar for gqlgen, which binds it to json.RawMessage through MarshalJSON and
// UnmarshalJSON below.
type JSON = json.RawMessage

// MarshalJSON writes a JSON value as it is (null when empty).
func MarshalJSON(v json.RawMessage) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) {
		if len(v) == 0 {
			_, _ = io.WriteString(w, "null")
			return
		}
		_, _ = w.Write(v)
	})
}

// UnmarshalJSON turns a JSON argument or input field (decoded from variables or a literal) into
// JSON text. A value that cannot be stored as it is, a string holding a NUL character, is an
// INVALID_INPUT error: it is refused rather than changed.
func UnmarshalJSON(v any) (json.RawMessage, error) {
	raw, ok := v.(json.RawMessage)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, &workflow.Error{Code: workflow.CodeInvalidInput, Message: "not a JSON value"}
		}
		raw = b
	} else if !json.Valid(raw) {
		return nil, &workflow.Error{Code: workflow.CodeInvalidInput, Message: "not a JSON value"}
	}
	if err := workflow.CheckJSON("", raw); err != nil {
		return nil, err
	}
	return raw, nil
}
