package persistence

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// dialect is the seam between the Store, written once over Bun, and the statements that differ per
// database. Each database has one implementation (dialect_postgres.go, dialect_sqlite.go,
// dialect_mysql.go); the Store never asks which database it talks to.
type dialect interface {
	// kind names the database.
	kind() Kind
	// migrations are the embedded SQL migrations of the database.
	migrations() fs.FS
	// openBeat opens the heartbeats' own connection (nil: none, they share the Store's), so that a
	// heartbeat never queues behind API reads holding the pool. path is the URL after its scheme;
	// opts ask for one connection.
	openBeat(ctx context.Context, path, rawURL string, opts OpenOptions) (*bun.DB, error)
	// withMigrationLock runs fn while holding the lock that makes nodes migrating one database at
	// once take turns.
	withMigrationLock(ctx context.Context, db *bun.DB, fn func() error) error
	// tableExists reports whether a table exists in the Store's database (or schema).
	tableExists(ctx context.Context, db bun.IDB, name string) (bool, error)
	// castTime wraps a placeholder so that the database reads it as a time where it cannot infer
	// the type (a CASE of bound values).
	castTime(placeholder string) string

	// capabilities says what the database can do that others cannot.
	capabilities() Capabilities

	// The inserts of the rows written on every step: each inserts its rows in one statement (or
	// a few, within the database's packet size) and sets their IDs (action variables have none).
	insertWorkflows(ctx context.Context, s *Store, rows []*Workflow) error
	insertActions(ctx context.Context, s *Store, rows []*Action) error
	insertActionVariables(ctx context.Context, s *Store, rows []*ActionVariable) error
	insertTaskInstances(ctx context.Context, s *Store, rows []*TaskInstance) error
	insertActivityLogs(ctx context.Context, s *Store, rows []*ActivityLog) error
	// insertSkippingDuplicates inserts a model (a struct or a slice), skipping rows that collide
	// with a stored one on the unique key of conflictColumns ("": any), and returns how many it
	// inserted.
	// With returnID (a struct model only) it sets the ID of a row it inserted.
	insertSkippingDuplicates(ctx context.Context, s *Store, model any, conflictColumns string, returnID bool) (int64, error)
	// uniqueViolation reports whether err is the database refusing a duplicate key.
	uniqueViolation(err error) bool
	// retryable reports whether err is the database rolling back a transaction that may succeed
	// when run again (a deadlock victim, a lock wait timeout, a serialization failure).
	retryable(err error) bool

	// claim marks the workflows c selects as claimed and returns them (tx is a transaction).
	claim(ctx context.Context, tx *Store, c claimStatement) ([]*Workflow, error)
	// complete writes completions fenced by executor and version and returns the IDs it wrote.
	complete(ctx context.Context, s *Store, cs []WorkflowCompletion, now time.Time) ([]int64, error)
	// leaseTasks leases the remote tasks l selects and returns them as they now are, in any order.
	leaseTasks(ctx context.Context, s *Store, l leaseStatement) ([]*RemoteTask, error)
	// endTasks writes workers' results, each fenced by its token and live lease, and returns the
	// tasks it ended as they now are, in any order.
	endTasks(ctx context.Context, s *Store, ps []RemoteTaskEndParams, now time.Time) ([]*RemoteTask, error)

	// insertChangeEvents writes change events so that readers see them in commit order.
	insertChangeEvents(ctx context.Context, s *Store, events []*ChangeEvent) error
	// listChangeEvents reads committed change events after a cursor, in stream order.
	listChangeEvents(ctx context.Context, s *Store, p ChangeEventListParams) ([]*ChangeEvent, error)
	// changeEventHead returns the cursor of the newest readable change event.
	changeEventHead(ctx context.Context, s *Store) (EventCursor, error)
	// changeEventTail returns the cursor of the oldest change event stored (zero: none).
	changeEventTail(ctx context.Context, s *Store) (EventCursor, error)
	// trimChangeEvents deletes, among the limit oldest change events, those that happened before
	// a time, and returns how many it deleted.
	trimChangeEvents(ctx context.Context, s *Store, before time.Time, limit int) (int, error)
	// estimateRows returns the planner's estimate of the rows a one-table SELECT returns, or
	// false where the database offers none.
	estimateRows(ctx context.Context, s *Store, query string) (int, bool, error)
	// statusIndexed returns a condition on workflows (alias w, with one argument, arg) that an
	// index serves to find the workflows in a status, or false when no index holds that status.
	statusIndexed(st Status) (where string, arg any, ok bool)
	// planCost returns the planner's estimate of a query's cost, or false where the database
	// gives none.
	planCost(ctx context.Context, s *Store, query string) (float64, bool, error)
	// analyze refreshes the planner's statistics of cairn's tables.
	analyze(ctx context.Context, s *Store) error

	// asyncCommit lets the current transaction commit without waiting for its log to reach disk,
	// where the database allows it per transaction.
	asyncCommit(ctx context.Context, tx *Store) error
	// beforeCommit runs at the end of every transaction made by Store.Tx, just before it commits.
	beforeCommit(ctx context.Context, tx *Store) error
	// sendHints sends hints to the other nodes (Listen only).
	sendHints(ctx context.Context, s *Store, hints []string) error
	// listenHints calls ready once it listens, then hint for every hint another node sends, until
	// ctx ends or the connection fails (Listen only).
	listenHints(ctx context.Context, s *Store, ready func(), hint func(string)) error
}

// claimStatement is a claim in parts each dialect assembles: SET the claim's columns on the rows
// WHERE due, taken in ORDER, at most Limit.
type claimStatement struct {
	Set     string
	SetArgs []any
	// Claimed changes a workflow read before the claim as Set changes its row.
	Claimed func(w *Workflow)
	Due     string
	DueArgs []any
	// Types, when set, are the workflow types the claim takes, which Due leaves out. The due index
	// is ordered by group, then type, then claim order, so each type's due rows are read by a
	// probe of their own and the probes are merged in claim order: a claim never reads through
	// the due workflows of a type it does not take (a flow-controlled type's held backlog, say).
	Types []string
	Group string
	Order string
	Limit int
}

// dueOfType is Due with the condition on the type, for a claim of at most one type (typed is
// false for several: the dialect then reads them type by type).
func (c claimStatement) dueOfType() (due string, args []any, typed bool) {
	switch len(c.Types) {
	case 0:
		return c.Due, c.DueArgs, true
	case 1:
		return c.Due + " AND type = ?", append(append([]any{}, c.DueArgs...), c.Types[0]), true
	}
	return "", nil, false
}

// byTypeUnion is the IDs of the claim's due rows, type by type, merged in claim order: one
// subquery per type, each reading the first Limit rows of its type from the due index. cols are
// the columns each reads (those of Order among them), lock what follows its LIMIT.
func (c claimStatement) byTypeUnion(cols, lock string) (string, []any) {
	var b strings.Builder
	var args []any
	for i, typ := range c.Types {
		if i > 0 {
			b.WriteString(" UNION ALL ")
		}
		fmt.Fprintf(&b, "SELECT * FROM (SELECT %s FROM workflows WHERE %s AND type = ? ORDER BY %s LIMIT ?%s) AS b%d",
			cols, c.Due, c.Order, lock, i)
		args = append(append(args, c.DueArgs...), typ, c.Limit)
	}
	return b.String(), args
}

// updateStatement is an UPDATE of Table: SET on the rows WHERE selects.
type updateStatement struct {
	Table     string
	Set       string
	SetArgs   []any
	Where     string
	WhereArgs []any
}

// txState is what a transaction made by Store.Tx carries until it commits.
type txState struct {
	// events are change events to write at commit (dialects that stamp them then).
	events []*ChangeEvent
}

// forUpdate adds the dialect's row lock to a SELECT.
func (s *Store) forUpdate(q *bun.SelectQuery, skipLocked bool) *bun.SelectQuery {
	if clause := s.rowLock(skipLocked); clause != "" {
		q = q.For(clause)
	}
	return q
}

// insertMany inserts rows in one statement through the dialect's insert of their table, and wraps
// an error with what was being inserted.
func insertMany[T any](ctx context.Context, s *Store, rows []*T, what string,
	insert func(ctx context.Context, s *Store, rows []*T) error) error {
	if len(rows) == 0 {
		return nil
	}
	if err := insert(ctx, s, rows); err != nil {
		return fmt.Errorf("error inserting %d %s: %w", len(rows), what, s.conflictOr(err))
	}
	return nil
}

// bunInsert inserts rows with Bun's multi-row VALUES, reading the IDs back when returnIDs
// (RETURNING where the database has it, else the last insert ID of a consecutive run).
func bunInsert[T any](ctx context.Context, s *Store, rows []*T, returnIDs bool) error {
	q := s.idb.NewInsert().Model(&rows)
	if returnIDs {
		q = q.Returning("id")
	}
	_, err := q.Exec(ctx)
	return err
}

// execCount runs a statement and returns how many rows it changed.
func execCount(ctx context.Context, s *Store, q string, args ...any) (int, error) {
	res, err := s.idb.NewRaw(q, args...).Exec(ctx)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// updateReturningIDs runs an UPDATE and returns the IDs of the rows it changed.
func (s *Store) updateReturningIDs(ctx context.Context, u updateStatement) ([]int64, error) {
	if s.dialect.capabilities().Returning {
		return updateReturning(ctx, s, u)
	}
	return updateLockingIDs(ctx, s, u)
}

// updateReturning runs an UPDATE ... RETURNING id.
func updateReturning(ctx context.Context, s *Store, u updateStatement) ([]int64, error) {
	var ids []int64
	args := append(append([]any{}, u.SetArgs...), u.WhereArgs...)
	if err := s.idb.NewRaw("UPDATE "+u.Table+" SET "+u.Set+" WHERE "+u.Where+" RETURNING id", args...).Scan(ctx, &ids); err != nil {
		return nil, err
	}
	return ids, nil
}

// updateLockingIDs locks the rows the WHERE selects, then updates them by ID (without Returning).
func updateLockingIDs(ctx context.Context, s *Store, u updateStatement) ([]int64, error) {
	var ids []int64
	err := s.Tx(ctx, func(ctx context.Context, tx *Store) error {
		ids = nil // Tx may run this again
		if err := tx.idb.NewRaw("SELECT id FROM "+u.Table+" WHERE "+u.Where+" ORDER BY id FOR UPDATE", u.WhereArgs...).Scan(ctx, &ids); err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		_, err := tx.idb.NewRaw("UPDATE "+u.Table+" SET "+u.Set+" WHERE id IN (?)", append(append([]any{}, u.SetArgs...), bunIn(ids))...).Exec(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// sqlRunner is what the dialects' fast paths need of a database/sql handle (a DB, Conn or Tx).
type sqlRunner interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// rawSQL is the database/sql handle under the Store's Bun handle: its statements bind their values
// instead of having Bun write them into the text.
func rawSQL(s *Store) sqlRunner {
	switch db := s.idb.(type) {
	case bun.Tx:
		return db.Tx
	case *bun.DB:
		return db.DB
	case bun.Conn:
		return db.Conn
	}
	return s.db.DB
}

// insertedIDs runs an INSERT of n rows, fed in input order, with RETURNING id through rawSQL and
// returns the IDs in input order: PostgreSQL's sequence and SQLite's rowid hand out ascending
// values in the order rows are inserted, so the i-th smallest ID belongs to the i-th input row.
func insertedIDs(ctx context.Context, s *Store, query string, n int, args ...any) ([]int64, error) {
	ids, err := returnedIDs(ctx, s, query, n, args...)
	if err == nil && len(ids) != n {
		err = fmt.Errorf("inserted %d rows, expected %d", len(ids), n)
	}
	return ids, err
}

// returnedIDs runs a statement with RETURNING id through rawSQL (its values bound, not written
// into the text) and returns the IDs in ascending order; n is how many are expected at most.
func returnedIDs(ctx context.Context, s *Store, query string, n int, args ...any) ([]int64, error) {
	rows, err := rawSQL(s).QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	ids := make([]int64, 0, n)
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.Sort(ids)
	return ids, nil
}
