package model

import (
	"github.com/99designs/gqlgen/graphql"

	"github.com/cairnflow/cairn/workflow"
)

// String names GraphQL's String scalar for gqlgen, bound to string through MarshalString and
// UnmarshalString.
type String = string

// MarshalString writes a string as gqlgen's own String does.
func MarshalString(s string) graphql.Marshaler { return graphql.MarshalString(s) }

// UnmarshalString reads a String argument or input field. A NUL character (or invalid UTF-8) can
// be stored by neither database, so it is an INVALID_INPUT error, whatever the field; how long a
// string may be is the operation's rule (workflow.MaxKeyLength, ...).
func UnmarshalString(v any) (string, error) {
	s, err := graphql.UnmarshalString(v)
	if err != nil {
		return "", &workflow.Error{Code: workflow.CodeInvalidInput, Message: "not a String"}
	}
	if err := workflow.CheckString("", s, 0); err != nil {
		return "", err
	}
	return s, nil
}
