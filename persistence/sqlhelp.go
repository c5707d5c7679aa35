package persistence

import (
	"fmt"
	"strings"

	"github.com/uptrace/bun"
)

// bunIn expands a slice into the comma-separated list inside "IN (?)".
func bunIn(v any) any { return bun.List(v) }

// conflictOr turns a unique-constraint violation into ErrConflict and leaves other errors as they are.
func conflictOr(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if strings.Contains(msg, "SQLSTATE 23505") || strings.Contains(msg, "UNIQUE constraint failed") ||
		strings.Contains(msg, "duplicate key value") {
		return fmt.Errorf("%w: %v", ErrConflict, err)
	}
	return err
}
