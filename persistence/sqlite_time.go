package persistence

import (
	"errors"
	"time"

	bundialect "github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
)

// errTimeOutOfRange refuses a time that SQLite could not sort or read back.
var errTimeOutOfRange = errors.New("cairn: a time outside the years 0001 to 9999 (UTC) cannot be stored")

// sqliteTimeGuard is Bun's SQLite dialect with one guard. SQLite stores times as text in UTC
// ("2006-01-02 15:04:05.999999+00:00"), which sorts as the times do and parses back for every
// year from 0001 to 9999: a '+' sorts before the '.' of a fraction, and a fraction's digits in
// order. A time outside those years would be written as "10000-..." or "-0001-...", sort before
// today and fail to parse, stopping every claim for good; instead, the statement fails. The
// operations refuse such times first (workflow.CheckTime), so only a bug reaches this guard.
type sqliteTimeGuard struct{ *sqlitedialect.Dialect }

func newSQLiteTimeGuard() sqliteTimeGuard { return sqliteTimeGuard{sqlitedialect.New()} }

// AppendTime writes a time as Bun does, or an error for a time outside the years 0001 to 9999.
func (d sqliteTimeGuard) AppendTime(b []byte, tm time.Time) []byte {
	if y := tm.UTC().Year(); y < 1 || y > 9999 {
		return bundialect.AppendError(b, errTimeOutOfRange)
	}
	return d.Dialect.AppendTime(b, tm)
}
