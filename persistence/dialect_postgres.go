package persistence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"

	"github.com/cairnflow/cairn/migrations"
)

// postgresDialect is PostgreSQL: row locks with SKIP LOCKED, UPDATE ... FROM ... RETURNING, the
// unnest fast paths of dialect_postgres_bulk.go, change events ordered by transaction ID, and
// LISTEN/NOTIFY between nodes.
type postgresDialect struct {
	// pooled: the Store reaches PostgreSQL through a pooler in transaction mode (OpenOptions.Pooler),
	// where a session's state does not outlive a transaction: no LISTEN, no session locks.
	pooled bool
}

var _ dialect = postgresDialect{}

// pgUniqueViolation is PostgreSQL's SQLSTATE for a unique-constraint violation.
const pgUniqueViolation = "23505"

// The advisory lock that serializes cairn nodes migrating one schema at once; the key is derived
// from the schema so that tests migrating their own schemas in parallel do not queue behind each
// other.
const (
	pgMigrationLockSQL   = "SELECT pg_advisory_lock(hashtext('cairn.migrate.' || current_schema()))"
	pgMigrationUnlockSQL = "SELECT pg_advisory_unlock(hashtext('cairn.migrate.' || current_schema()))"
	// pgMigrationXactLockSQL is the same lock, held until its transaction ends.
	pgMigrationXactLockSQL = "SELECT pg_advisory_xact_lock(hashtext('cairn.migrate.' || current_schema()))"
)

func (postgresDialect) kind() Kind        { return KindPostgres }
func (postgresDialect) migrations() fs.FS { return migrations.PostgreSQL() }

// openBeat opens a one-connection pool.
func (postgresDialect) openBeat(_ context.Context, _, rawURL string, opts OpenOptions) (*bun.DB, error) {
	return openPostgres(rawURL, opts)
}

// withMigrationLock holds a session advisory lock, blocking other nodes until fn ends. Behind a
// transaction-mode pooler, where a session lock would stay behind on whichever server connection
// took it, it holds a transaction-level lock in a transaction kept open until fn ends instead (the
// pooler keeps a transaction on one server connection).
func (d postgresDialect) withMigrationLock(ctx context.Context, db *bun.DB, fn func() error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("error taking a connection for the migration lock: %w", err)
	}
	defer conn.Close()
	if d.pooled {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("error taking the migration lock: %w", err)
		}
		defer func() { _ = tx.Rollback() }()
		if _, err := tx.ExecContext(ctx, pgMigrationXactLockSQL); err != nil {
			return fmt.Errorf("error taking the migration lock: %w", err)
		}
		return fn()
	}
	if _, err := conn.ExecContext(ctx, pgMigrationLockSQL); err != nil {
		return fmt.Errorf("error taking the migration lock: %w", err)
	}
	defer func() {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), pgMigrationUnlockSQL)
	}()
	return fn()
}

func (postgresDialect) tableExists(ctx context.Context, db bun.IDB, name string) (bool, error) {
	var n int
	err := db.NewRaw("SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?", name).Scan(ctx, &n)
	return n > 0, err
}

func (d postgresDialect) capabilities() Capabilities {
	return Capabilities{SkipLocked: true, Listen: !d.pooled, Returning: true, Estimates: true}
}

func (postgresDialect) castTime(placeholder string) string { return placeholder + "::timestamptz" }

func (postgresDialect) insertSkippingDuplicates(ctx context.Context, s *Store, model any, conflictColumns string, returnID bool) (int64, error) {
	return insertOnConflictDoNothing(ctx, s, model, conflictColumns, returnID)
}

// insertOnConflictDoNothing is the INSERT ... ON CONFLICT DO NOTHING that PostgreSQL and SQLite
// share (no conflictColumns: any unique key); RETURNING lists only the rows it inserted.
func insertOnConflictDoNothing(ctx context.Context, s *Store, model any, conflictColumns string, returnID bool) (int64, error) {
	conflict := "CONFLICT DO NOTHING" // on any unique key
	if conflictColumns != "" {
		conflict = "CONFLICT (" + conflictColumns + ") DO NOTHING"
	}
	q := s.idb.NewInsert().Model(model).On(conflict)
	if returnID {
		q = q.Returning("id")
	}
	res, err := q.Exec(ctx)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (postgresDialect) uniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == pgUniqueViolation
}

// The SQLSTATEs of a transaction PostgreSQL aborted to break a deadlock or a serialization conflict.
const (
	pgDeadlockDetected     = "40P01"
	pgSerializationFailure = "40001"
)

func (postgresDialect) retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == pgDeadlockDetected || pgErr.Code == pgSerializationFailure)
}

// claim locks the due rows with SKIP LOCKED and updates them in one statement (updateLocked);
// several types are read type by type (pgClaimByType).
func (postgresDialect) claim(ctx context.Context, tx *Store, c claimStatement) ([]*Workflow, error) {
	var wfs []*Workflow
	if due, args, typed := c.dueOfType(); typed {
		err := postgresDialect{}.updateLocked(ctx, tx, "workflows", c.Set, c.SetArgs, due, args, c.Order, c.Limit, &wfs)
		return wfs, err
	}
	q, args := pgClaimByType(c)
	err := queryBound(ctx, tx, &wfs, q, args...)
	return wfs, err
}

// pgClaimByType is the claim of several types: a lateral probe of the due index per type, each
// locking up to Limit rows with SKIP LOCKED, merged in claim order; the update takes the first
// Limit, by their row addresses as updateLocked does. One statement text for any number of types
// (they are an array), so it is planned alike. Where several types have due work, the rows a
// probe locked beyond the first Limit are let go at the claim's commit, untouched.
func pgClaimByType(c claimStatement) (string, []any) {
	args := append(append(append([]any{}, c.SetArgs...), c.Types), c.DueArgs...)
	args = append(args, c.Limit, c.Limit)
	return `UPDATE workflows AS t SET ` + c.Set + ` WHERE t.ctid = ANY(ARRAY(
		SELECT b.ctid FROM unnest(?::text[]) AS ty(name) CROSS JOIN LATERAL (
			SELECT ctid, id, priority, next_activation FROM workflows WHERE ` + c.Due + ` AND type = ty.name
			ORDER BY ` + c.Order + ` LIMIT ? FOR UPDATE SKIP LOCKED) AS b
		ORDER BY ` + c.Order + ` LIMIT ?)) RETURNING t.*`, args
}

// updateLocked updates, in one statement, at most limit rows of table WHERE due, in order,
// locked with SKIP LOCKED, and scans them into dest. The locked rows' addresses (ctid) are
// gathered into an array (an InitPlan) and the update fetches each by its address (a TID scan),
// whatever the statistics say. Found by ID instead, with the statistics of an emptied table (one
// row, they say) the planner read every entry of workflows_type_idx for the IDs; joined to the
// subquery, it walked every workflow and rescanned the subquery for each. A row another
// transaction changed after the statement began is locked in its new version, which the update
// cannot see: it is left as it is and released at commit, and the next claim takes it.
func (postgresDialect) updateLocked(ctx context.Context, s *Store, table, set string, setArgs []any, due string, dueArgs []any,
	order string, limit int, dest any) error {
	args := append(append(append([]any{}, setArgs...), dueArgs...), limit)
	return queryBound(ctx, s, dest, `UPDATE `+table+` AS t SET `+set+` WHERE t.ctid = ANY(ARRAY(SELECT ctid FROM `+table+` WHERE `+due+
		` ORDER BY `+order+` LIMIT ? FOR UPDATE SKIP LOCKED)) RETURNING t.*`, args...)
}

// leaseTasks leases in one statement: the due rows are locked with SKIP LOCKED and updated by
// the same UPDATE ... RETURNING. Outside a transaction the statement is its own, and it
// turns off synchronous_commit for itself (set_config(..., true) lasts until its commit): a lease
// lost in a crash only leaves its task pending, so it need not wait for the disk.
func (postgresDialect) leaseTasks(ctx context.Context, s *Store, l leaseStatement) ([]*RemoteTask, error) {
	var out []*RemoteTask
	q, args := pgLeaseQuery(l, !s.InTx())
	err := queryBound(ctx, s, &out, q, args...)
	return out, err
}

// pgLeaseQuery is the lease's statement on PostgreSQL: each function's oldest pending tasks locked
// by a lateral read of remote_tasks_pending_idx (with SKIP LOCKED: a row another lease holds is
// passed over), the oldest of them all updated. The index's order (created, id) is one the primary
// key cannot give, so no statistics make the planner walk it instead.
func pgLeaseQuery(l leaseStatement, async bool) (string, []any) {
	with, from := "", ""
	if async {
		with, from = "WITH async AS MATERIALIZED (SELECT set_config('synchronous_commit', 'off', true) AS sc) ", " FROM async"
	}
	args := append(append([]any{}, l.SetArgs...), l.Functions, l.Limit, l.Limit)
	return with + `UPDATE remote_tasks AS t SET ` + l.Set + from + ` WHERE t.ctid = ANY(ARRAY(
		SELECT p.ctid FROM unnest(?::text[]) AS f(fn) CROSS JOIN LATERAL (` +
		fmt.Sprintf(pendingByFunction, "ctid, created, id", "f.fn") + ` FOR UPDATE SKIP LOCKED) AS p
		ORDER BY p.created, p.id LIMIT ?)) RETURNING t.*`, args
}

// endTasks writes every result in one UPDATE ... FROM (VALUES ...) RETURNING.
func (postgresDialect) endTasks(ctx context.Context, s *Store, ps []RemoteTaskEndParams, now time.Time) ([]*RemoteTask, error) {
	var out []*RemoteTask
	q, args := endTasksValues(ps, now, func(p, typ string) string { return p + "::" + typ }, "remote_tasks AS rt", "rt",
		"v.fns @> to_jsonb(rt.function)", "rt.*")
	err := s.idb.NewRaw(q, args...).Scan(ctx, &out)
	return out, err
}

// pgEventHorizonSQL is the transaction ID below which every change event is final: the oldest
// transaction still running when the statement's snapshot was taken, leaving out those that are
// still running now and hold no lock on any relation of this schema (other databases', other
// schemas', a long report's). cairn writes a workflow table before, or with, its first change
// event, so a transaction that will write events holds such a lock from the moment it has an ID;
// one that ended since the snapshot holds no locks and is kept, as its events are not visible yet.
// pg_locks is read once (a materialized CTE), so its transaction and relation locks agree.
// Without this, any open transaction on the server held every subscription back until it ended.
const pgEventHorizonSQL = `(WITH l AS MATERIALIZED (SELECT locktype, database, relation, transactionid, pid FROM pg_locks WHERE granted),
	elsewhere AS (SELECT x.transactionid::text::bigint AS xid FROM l AS x WHERE x.locktype = 'transactionid'
		AND NOT EXISTS (SELECT 1 FROM l AS r JOIN pg_class AS c ON c.oid = r.relation
			WHERE r.pid = x.pid AND r.locktype = 'relation' AND c.relnamespace = current_schema()::regnamespace
			AND r.database = (SELECT oid FROM pg_database WHERE datname = current_database())))
	SELECT COALESCE(min(x), pg_snapshot_xmax(pg_current_snapshot())) FROM pg_snapshot_xip(pg_current_snapshot()) AS x
	WHERE x::text::bigint % 4294967296 NOT IN (SELECT xid FROM elsewhere))`

// listChangeEvents reads only events of transactions older than the oldest one of this schema
// still running, so an event that commits later can never land before a cursor a reader already
// holds.
func (postgresDialect) listChangeEvents(ctx context.Context, s *Store, p ChangeEventListParams) ([]*ChangeEvent, error) {
	q := `SELECT id, txid::text::bigint AS txid, workflow_id, type, action_id, status, state, at FROM change_events
		WHERE (txid > ?::text::xid8 OR (txid = ?::text::xid8 AND id > ?))
		AND txid < ` + pgEventHorizonSQL
	args := []any{p.After.TxID, p.After.TxID, p.After.ID}
	return scanChangeEvents(ctx, s, q, args, p)
}

func (postgresDialect) changeEventHead(ctx context.Context, s *Store) (EventCursor, error) {
	return scanEventCursor(ctx, s, `SELECT txid::text::bigint AS tx_id, id FROM change_events
		WHERE txid < `+pgEventHorizonSQL+` ORDER BY txid DESC, id DESC LIMIT 1`)
}

func (postgresDialect) changeEventTail(ctx context.Context, s *Store) (EventCursor, error) {
	return scanEventCursor(ctx, s, `SELECT txid::text::bigint AS tx_id, id FROM change_events ORDER BY txid, id LIMIT 1`)
}

// trimChangeEvents looks only at the head of the stream (the primary key's first entries).
func (postgresDialect) trimChangeEvents(ctx context.Context, s *Store, before time.Time, limit int) (int, error) {
	return execCount(ctx, s, `DELETE FROM change_events WHERE (txid, id) IN (
		SELECT h.txid, h.id FROM (SELECT txid, id, at FROM change_events ORDER BY txid, id LIMIT ?) AS h WHERE h.at < ?)`, limit, before)
}

func (postgresDialect) analyze(ctx context.Context, s *Store) error {
	_, err := s.idb.NewRaw("ANALYZE").Exec(ctx)
	return err
}

// asyncCommit turns off synchronous_commit for the transaction.
func (postgresDialect) asyncCommit(ctx context.Context, tx *Store) error {
	_, err := tx.idb.ExecContext(ctx, "SET LOCAL synchronous_commit = off")
	return err
}

func (postgresDialect) beforeCommit(context.Context, *Store) error { return nil }

// pgHintChannelSQL names the LISTEN/NOTIFY channel of the schema a connection works in: nodes of
// one cairn share it, and cairns in other schemas of the same database never hear each other's
// hints (workflow IDs repeat across schemas). Hashed, so that any schema name fits a channel name.
const pgHintChannelSQL = "'cairn_' || left(md5(current_schema()), 16)"

// sendHints NOTIFYs every hint in one statement; the array is bound straight to pgx, as text[].
func (postgresDialect) sendHints(ctx context.Context, s *Store, hints []string) error {
	_, err := s.db.DB.ExecContext(ctx, "SELECT pg_notify("+pgHintChannelSQL+", x) FROM unnest($1::text[]) AS x", hints)
	return err
}

// listenHints LISTENs on a connection of its own (a pooled one would go back to the pool).
func (postgresDialect) listenHints(ctx context.Context, s *Store, ready func(), hint func(string)) error {
	conn, err := pgx.Connect(ctx, s.raw)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var channel string
	if err := conn.QueryRow(ctx, "SELECT "+pgHintChannelSQL).Scan(&channel); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return err
	}
	ready()
	for {
		note, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		hint(note.Payload)
	}
}

func (postgresDialect) estimateRows(ctx context.Context, s *Store, query string) (int, bool, error) {
	rows, _, err := explainPostgres(ctx, s, query)
	return int(rows), err == nil, err
}

func (postgresDialect) planCost(ctx context.Context, s *Store, query string) (float64, bool, error) {
	_, cost, err := explainPostgres(ctx, s, query)
	return cost, err == nil, err
}

// explainPostgres returns the planner's estimate of a query's rows and total cost.
func explainPostgres(ctx context.Context, s *Store, query string) (rows, cost float64, err error) {
	var plan string
	if err := s.idb.QueryRowContext(ctx, "EXPLAIN (FORMAT JSON) "+query).Scan(&plan); err != nil {
		return 0, 0, err
	}
	var out []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
			Cost float64 `json:"Total Cost"`
		} `json:"Plan"`
	}
	if err := json.Unmarshal([]byte(plan), &out); err != nil {
		return 0, 0, err
	}
	if len(out) == 0 {
		return 0, 0, fmt.Errorf("EXPLAIN returned no plan")
	}
	return out[0].Plan.Rows, out[0].Plan.Cost, nil
}

// statusIndexed: the partial workflows_attention_idx holds the statuses that need attention.
func (postgresDialect) statusIndexed(st Status) (string, any, bool) {
	return "w.status = ?", st, containsStatus(attentionStatuses, st)
}

// plannerWithout turns the PostgreSQL planner's methods off (enable_<method> = off: "nestloop",
// "seqscan", "bitmapscan", "sort") for what s's transaction runs until restore is called, which
// sets them back to their defaults. It is for one statement whose plan must not depend on the
// statistics: a method turned off is still used where no other plan exists. Outside a transaction
// (a SET LOCAL would last no longer than its own statement) and on the other databases it does
// nothing.
func plannerWithout(ctx context.Context, s *Store, methods ...string) (restore func() error, err error) {
	if _, ok := s.idb.(bun.Tx); !ok || s.Kind() != KindPostgres {
		return func() error { return nil }, nil
	}
	var off, back strings.Builder
	for _, m := range methods {
		fmt.Fprintf(&off, "SET LOCAL enable_%s = off;", m)
		fmt.Fprintf(&back, "SET LOCAL enable_%s TO DEFAULT;", m)
	}
	run := rawSQL(s)
	if _, err := run.ExecContext(ctx, off.String()); err != nil {
		return nil, err
	}
	return func() error {
		_, err := run.ExecContext(ctx, back.String())
		return err
	}, nil
}
