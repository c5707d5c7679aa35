package model

import (
	"encoding/json"
	"fmt"
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

// UnmarshalJSON turns a GraphQL input value (decoded from variables or a literal) into JSON.
func UnmarshalJSON(v any) (json.RawMessage, error) {
	if raw, ok := v.(json.RawMessage); ok {
		return raw, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &workflow.Error{Code: workflow.CodeInvalidInput, Message: fmt.Sprintf("not a JSON value: %v", err)}
	}
	return b, nil
}
