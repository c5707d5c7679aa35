package persistence

import (
	"fmt"
	"strings"

	"github.com/uptrace/bun"
)

// bunIn expands a slice into a parenthesized IN list.
func bunIn(v any) any { return bun.In(v) }

// cast returns expr cast to a PostgreSQL type, or expr as is on SQLite (whose CAST to an unknown
// type would turn text into numbers).
func (s *Store) cast(expr, pgType string) string {
	if s.isPostgres() {
		return expr + "::" + pgType
	}
	return expr
}

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
