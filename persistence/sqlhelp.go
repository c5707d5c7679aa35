package persistence

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// pgUniqueViolation is PostgreSQL's SQLSTATE for a unique-constraint violation.
const pgUniqueViolation = "23505"

// bunIn expands a slice into the comma-separated list inside "IN (?)".
func bunIn(v any) any { return bun.List(v) }

// conflictOr turns a unique-constraint violation into ErrConflict and leaves other errors as they are.
func conflictOr(err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	var liteErr *sqlite.Error
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == pgUniqueViolation,
		errors.As(err, &liteErr) && (liteErr.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || liteErr.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY):
		return fmt.Errorf("%w: %v", ErrConflict, err)
	}
	return err
}
