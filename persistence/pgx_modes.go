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

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
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

