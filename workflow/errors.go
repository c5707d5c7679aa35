package workflow

import (
	"errors"
	"fmt"

	"github.com/cairnflow/cairn/persistence"
)

// Code classifies an operation's error for clients (the GraphQL extensions.code).
type Code string

// The error codes.
const (
	CodeNotFound     Code = "NOT_FOUND"
	CodeInvalidInput Code = "INVALID_INPUT"
	CodeConflict     Code = "CONFLICT"
	CodeInternal     Code = "INTERNAL"
)

// Error is an operation's refusal: what is wrong, which input field is at fault, and a code.
// An operation that returns one changed nothing.
type Error struct {
	Code    Code
	Field   string
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s", e.Field, e.Message)
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

func invalid(field, format string, args ...any) *Error {
	return &Error{Code: CodeInvalidInput, Field: field, Message: fmt.Sprintf(format, args...)}
}

func conflict(format string, args ...any) *Error {
	return &Error{Code: CodeConflict, Message: fmt.Sprintf(format, args...)}
}

func notFound(field, format string, args ...any) *Error {
	return &Error{Code: CodeNotFound, Field: field, Message: fmt.Sprintf(format, args...), Err: persistence.ErrNotFound}
}

// CodeOf returns the code of an error: an *Error's own, NOT_FOUND or CONFLICT for the Store's
// sentinels, INTERNAL for anything else.
func CodeOf(err error) Code {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e.Code
	case errors.Is(err, persistence.ErrNotFound):
		return CodeNotFound
	case errors.Is(err, persistence.ErrConflict):
		return CodeConflict
	default:
		return CodeInternal
	}
}

// NonRetryable wraps a step's error to say that retrying cannot help: the workflow goes to its
// ERROR state (or MANUAL) at once instead of spending its retry policy.
func NonRetryable(err error) error { return &nonRetryable{err} }

type nonRetryable struct{ err error }

func (n *nonRetryable) Error() string { return n.err.Error() }
func (n *nonRetryable) Unwrap() error { return n.err }

// IsNonRetryable reports whether err was wrapped by NonRetryable.
func IsNonRetryable(err error) bool {
	var n *nonRetryable
	return errors.As(err, &n)
}
