package persistence

import (
	"context"

	"github.com/uptrace/bun"
)

// The executors' session locks of each database that has them (see executor_sessions.go).

var (
	_ sessionLocker = postgresDialect{}
	_ sessionLocker = mysqlDialect{}
)

// PostgreSQL: a session advisory lock with a two-part key, the first part naming the schema (so
// the stores of several schemas in one database never collide), the second the executor.
const (
	pgExecutorLockSpace = `hashtext('cairn.executor:' || current_schema()) & 2147483647`
	pgExecutorLockID    = `(?::bigint % 2147483647)::int`
)

func (d postgresDialect) hasSessionLocks() bool { return !d.pooled }

func (postgresDialect) lockExecutor(ctx context.Context, db bun.IDB, id int64) (bool, error) {
	var ok bool
	err := db.NewRaw("SELECT pg_try_advisory_lock("+pgExecutorLockSpace+", "+pgExecutorLockID+")", id).Scan(ctx, &ok)
	return ok, err
}

func (postgresDialect) unlockExecutor(ctx context.Context, db bun.IDB, id int64) error {
	_, err := db.NewRaw("SELECT pg_advisory_unlock("+pgExecutorLockSpace+", "+pgExecutorLockID+")", id).Exec(ctx)
	return err
}

// executorLockFree looks the lock up in pg_locks, where a two-part advisory key shows as classid,
// objid and objsubid 2.
func (postgresDialect) executorLockFree() string {
	return `NOT EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
		AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND l.classid = (` + pgExecutorLockSpace + `)::oid AND l.objid = ((executors.id % 2147483647)::int)::oid)`
}

// MariaDB/MySQL: a named lock (GET_LOCK). Names are server-wide, so the name carries a digest of the
// database's.

func mysqlLockName(id string) string {
	return "CONCAT('cairn.', LEFT(MD5(DATABASE()), 16), '.', " + id + ")"
}

func (mysqlDialect) hasSessionLocks() bool { return true }

func (mysqlDialect) lockExecutor(ctx context.Context, db bun.IDB, id int64) (bool, error) {
	var got *int
	if err := db.NewRaw("SELECT GET_LOCK("+mysqlLockName("?")+", 0)", id).Scan(ctx, &got); err != nil {
		return false, err
	}
	return got != nil && *got == 1, nil
}

func (mysqlDialect) unlockExecutor(ctx context.Context, db bun.IDB, id int64) error {
	_, err := db.NewRaw("SELECT RELEASE_LOCK("+mysqlLockName("?")+")", id).Exec(ctx)
	return err
}

func (mysqlDialect) executorLockFree() string {
	return "IS_FREE_LOCK(" + mysqlLockName("executors.id") + ") = 1"
}
