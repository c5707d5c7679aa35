package workflow

import (
	"errors"
	"fmt"
	"strconv"

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
	// CodeForbidden: the caller's token may not do this (a worker token, another function's task).
	CodeForbidden Code = "FORBIDDEN"
)

// Error is an operation's refusal: what is wrong, which input field is at fault, and a code.
// An operation that returns one changed nothing.
type Error struct {
	Code    Code
	Field   string
	Message string
	Err     error

	// format and args rebuild Message with the Refs in it named another way (MessageNaming).
	format string
	args   []any
}

// Ref names a stored object in an error message. The engine prints its row number; the GraphQL API
// names it by the opaque ID its clients know instead (see Error.MessageNaming), so the engine needs
// no knowledge of that encoding.
type Ref struct {
	// Kind is the object's type name as the API calls it (RefWorkflow, RefSchedule).
	Kind string
	ID   int64
}

// The kinds of object a Ref names.
const (
	RefWorkflow = "Workflow"
	RefSchedule = "Schedule"
	// RefBulkOperation names a bulk operation.
	RefBulkOperation = "BulkOperation"
)

func (r Ref) String() string { return strconv.FormatInt(r.ID, 10) }

// MessageNaming returns the message with every Ref in it written by name (for the API: its opaque
// ID) instead of as a row number.
func (e *Error) MessageNaming(name func(Ref) string) string {
	if e.format == "" {
		return e.Message
	}
	args := make([]any, len(e.args))
	for i, a := range e.args {
		if r, ok := a.(Ref); ok {
			args[i] = name(r)
		} else {
			args[i] = a
		}
	}
	return fmt.Sprintf(e.format, args...)
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s", e.Field, e.Message)
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// NewError returns an error with a code, about an input field ("" for none), whose message is
// format with args (a Ref among args is named by MessageNaming).
func NewError(code Code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...), format: format, args: args}
}

func invalid(field, format string, args ...any) *Error {
	return NewError(CodeInvalidInput, field, format, args...)
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
