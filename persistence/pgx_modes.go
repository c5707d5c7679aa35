// How statements reach PostgreSQL: Bun writes each statement's values into its text, so most
// texts are used once (a claim names its time, a completion its IDs). pgx's default prepares
// and caches every text it is given: for a text used once that is a round trip to prepare it, a
// second to run it, and a prepared statement the connection keeps until the cache evicts it.
// Statements without parameters therefore run unnamed, parsed, planned and run in one round trip;
// those with parameters (the batch statements, whose text never changes) stay prepared.

package persistence

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun/schema"
)

// unpreparedLiterals is a connector of pgx's database/sql driver whose connections run queries
// without parameters unprepared.
type unpreparedLiterals struct{ driver.Connector }

func (c unpreparedLiterals) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return literalConn{conn.(*stdlib.Conn)}, nil
}

// literalConn is pgx's connection (every method of it, so database/sql finds the same optional
// interfaces), with QueryContext choosing the mode.
type literalConn struct{ *stdlib.Conn }

// execUnprepared asks pgx to run a statement unnamed in one round trip (pgx reads a leading
// QueryExecMode among the arguments as an option, not as a parameter).
var execUnprepared = []driver.NamedValue{{Ordinal: 1, Value: pgx.QueryExecModeExec}}

func (c literalConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if len(args) == 0 {
		args = execUnprepared
	}
	return c.Conn.QueryContext(ctx, query, args)
}

// pgParams turns a statement written for Bun (each ? a value) into one whose times, numbers,
// plain strings and arrays of those are PostgreSQL's numbered parameters, with their values apart,
// so that its text stays the same whatever they are: pgx prepares it once per connection, and the
// server plans a prepared text once (a generic plan, after five runs, unless planning for the
// values at hand promises a cheaper plan) instead of at every run: a claim's planning was 0.25 ms
// of its 0.35 ms. Everything else (a bunIn list, a status or other value of a named type, SQL of
// Bun's making) is written into the text as Bun writes it: those are the constants that partial
// indexes' predicates name (status IN ('CREATED', ...), status = 'PENDING'), and a generic plan
// uses such an index only when the statement names them too. The statement must have no ? of its
// own (in a string, or a jsonb operator).
func pgParams(gen schema.QueryGen, query string, args []any) (string, []any, error) {
	var b []byte
	values := make([]any, 0, len(args))
	next := 0
	for i := 0; i < len(query); i++ {
		if query[i] != '?' {
			b = append(b, query[i])
			continue
		}
		if next == len(args) {
			return "", nil, fmt.Errorf("statement has more placeholders than its %d values", len(args))
		}
		switch a := args[next].(type) {
		case time.Time, string, int, int64, bool, []string, []int64:
			values = append(values, a)
			b = append(b, '$')
			b = strconv.AppendInt(b, int64(len(values)), 10)
		default:
			b = gen.Append(b, a)
		}
		next++
	}
	if next != len(args) {
		return "", nil, fmt.Errorf("statement has %d placeholders for %d values", next, len(args))
	}
	return string(b), values, nil
}

// queryBound runs a statement written for Bun with its values bound as parameters (pgParams) and
// scans its rows into dest as Bun would.
func queryBound(ctx context.Context, s *Store, dest any, query string, args ...any) error {
	q, values, err := pgParams(s.db.QueryGen(), query, args)
	if err != nil {
		return err
	}
	rows, err := rawSQL(s).QueryContext(ctx, q, values...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return s.db.ScanRows(ctx, rows, dest)
}
