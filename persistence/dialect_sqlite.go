package persistence

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/cairnflow/cairn/migrations"
)

// sqliteDialect is SQLite: one writer at a time (a transaction holds the only write lock, so there
// are no row locks to take), UPDATE ... RETURNING, and change events in ID order, which is commit
// order when commits take turns.
type sqliteDialect struct{}

var _ dialect = sqliteDialect{}

func (sqliteDialect) kind() Kind        { return KindSQLite }
func (sqliteDialect) migrations() fs.FS { return migrations.SQLite() }

// openBeat opens a second connection to the same file (WAL lets it write while the main one
// reads). An in-memory database has none: another connection would see another database.
func (sqliteDialect) openBeat(_ context.Context, path, _ string, _ OpenOptions) (*bun.DB, error) {
	if path == ":memory:" || path == "" {
		return nil, nil
	}
	return openSQLite(path)
}

// withMigrationLock takes no lock: SQLite's writes are already serialized.
func (sqliteDialect) withMigrationLock(_ context.Context, _ *bun.DB, fn func() error) error {
	return fn()
}

func (sqliteDialect) tableExists(ctx context.Context, db bun.IDB, name string) (bool, error) {
	var n int
	err := db.NewRaw("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", name).Scan(ctx, &n)
	return n > 0, err
}

func (sqliteDialect) capabilities() Capabilities {
	return Capabilities{SingleWriter: true, Returning: true}
}

func (sqliteDialect) castTime(placeholder string) string { return placeholder }

// The inserts use Bun's multi-row VALUES ... RETURNING id.
func (sqliteDialect) insertActionVariables(ctx context.Context, s *Store, rows []*ActionVariable) error {
	return bunInsert(ctx, s, rows, false)
}
func (sqliteDialect) insertActivityLogs(ctx context.Context, s *Store, rows []*ActivityLog) error {
	return bunInsert(ctx, s, rows, true)
}

func (sqliteDialect) insertSkippingDuplicates(ctx context.Context, s *Store, model any, conflictColumns string, returnID bool) (int64, error) {
	return insertOnConflictDoNothing(ctx, s, model, conflictColumns, returnID)
}

func (sqliteDialect) uniqueViolation(err error) bool {
	var liteErr *sqlite.Error
	return errors.As(err, &liteErr) &&
		(liteErr.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || liteErr.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY)
}

// retryable is false: SQLite's transactions take the database's one write lock when they begin
// (_txlock=immediate), so they wait for each other (busy_timeout) and never deadlock.
func (sqliteDialect) retryable(error) bool { return false }

// claim updates the first due rows in one statement; the transaction is the only writer. Several
// types are read type by type and merged (claimStatement.byTypeUnion).
func (sqliteDialect) claim(ctx context.Context, tx *Store, c claimStatement) ([]*Workflow, error) {
	var wfs []*Workflow
	due, dueArgs, typed := c.dueOfType()
	from := "workflows WHERE " + due
	if !typed {
		var union string
		union, dueArgs = c.byTypeUnion("id, priority, next_activation", "")
		from = "(" + union + ")"
	}
	args := append(append(append([]any{}, c.SetArgs...), dueArgs...), c.Limit)
	err := tx.idb.NewRaw(`UPDATE workflows SET `+c.Set+` WHERE id IN (SELECT id FROM `+from+
		` ORDER BY `+c.Order+` LIMIT ?) RETURNING *`, args...).Scan(ctx, &wfs)
	return wfs, err
}

// leaseTasks leases in one UPDATE ... RETURNING (SQLite's only writer needs no row lock): the
// oldest of each function's oldest pending tasks, each function read from remote_tasks_pending_idx.
func (sqliteDialect) leaseTasks(ctx context.Context, s *Store, l leaseStatement) ([]*RemoteTask, error) {
	var out []*RemoteTask
	q, args := sqliteLeaseQuery(l)
	err := s.idb.NewRaw(q, args...).Scan(ctx, &out)
	return out, err
}

// sqliteLeaseQuery is SQLite's lease statement: a UNION ALL of a read a function.
func sqliteLeaseQuery(l leaseStatement) (string, []any) {
	args := append([]any{}, l.SetArgs...)
	reads := make([]string, len(l.Functions))
	for i, fn := range l.Functions {
		reads[i] = "SELECT * FROM (" + fmt.Sprintf(pendingByFunction, "created, id", "?") + ")"
		args = append(args, fn, l.Limit)
	}
	return `UPDATE remote_tasks SET ` + l.Set + ` WHERE id IN (SELECT id FROM (` + strings.Join(reads, " UNION ALL ") +
		`) ORDER BY created, id LIMIT ?) RETURNING *`, append(args, l.Limit)
}

// endTasks writes every result in one UPDATE ... FROM (VALUES ...) RETURNING.
func (sqliteDialect) endTasks(ctx context.Context, s *Store, ps []RemoteTaskEndParams, now time.Time) ([]*RemoteTask, error) {
	var out []*RemoteTask
	q, args := endTasksValues(ps, now, func(p, _ string) string { return p }, "remote_tasks", "remote_tasks",
		"EXISTS (SELECT 1 FROM json_each(v.fns) WHERE json_each.value = remote_tasks.function)", "*")
	err := s.idb.NewRaw(q, args...).Scan(ctx, &out)
	return out, err
}

func (sqliteDialect) listChangeEvents(ctx context.Context, s *Store, p ChangeEventListParams) ([]*ChangeEvent, error) {
	return scanChangeEvents(ctx, s, `SELECT id, txid, workflow_id, type, action_id, status, state, at FROM change_events WHERE id > ?`,
		[]any{p.After.ID}, p)
}

func (sqliteDialect) changeEventHead(ctx context.Context, s *Store) (EventCursor, error) {
	return scanEventCursor(ctx, s, `SELECT txid AS tx_id, id FROM change_events ORDER BY id DESC LIMIT 1`)
}

func (sqliteDialect) changeEventTail(ctx context.Context, s *Store) (EventCursor, error) {
	return scanEventCursor(ctx, s, `SELECT txid AS tx_id, id FROM change_events ORDER BY id LIMIT 1`)
}

// trimChangeEvents looks only at the head of the stream: txid is always 0 here, the stream is in
// id (rowid) order.
func (sqliteDialect) trimChangeEvents(ctx context.Context, s *Store, before time.Time, limit int) (int, error) {
	return execCount(ctx, s, `DELETE FROM change_events WHERE id IN (
		SELECT h.id FROM (SELECT id, at FROM change_events ORDER BY id LIMIT ?) AS h WHERE h.at < ?)`, limit, before)
}

func (sqliteDialect) analyze(ctx context.Context, s *Store) error {
	_, err := s.idb.NewRaw("ANALYZE").Exec(ctx)
	return err
}

func (sqliteDialect) asyncCommit(context.Context, *Store) error  { return nil }
func (sqliteDialect) beforeCommit(context.Context, *Store) error { return nil }

// sendHints and listenHints are never called: no Listen capability.
func (sqliteDialect) sendHints(context.Context, *Store, []string) error { return nil }
func (sqliteDialect) listenHints(ctx context.Context, _ *Store, _ func(), _ func(string)) error {
	<-ctx.Done()
	return ctx.Err()
}

// estimateRows: SQLite keeps no row estimates worth the name; callers count in full.
func (sqliteDialect) estimateRows(context.Context, *Store, string) (int, bool, error) {
	return 0, false, nil
}

// statusIndexed: the partial workflows_attention_idx holds the statuses that need attention.
func (sqliteDialect) statusIndexed(st Status) (string, any, bool) {
	return "w.status = ?", st, containsStatus(attentionStatuses, st)
}

func (sqliteDialect) planCost(context.Context, *Store, string) (float64, bool, error) {
	return 0, false, nil
}
