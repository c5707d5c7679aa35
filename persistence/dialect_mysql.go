package persistence

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/uptrace/bun"

	"github.com/cairnflow/cairn/migrations"
)

// mysqlDialect is MariaDB 10.11+ and MySQL 8 (InnoDB): row locks with SKIP LOCKED, but no UPDATE
// ... RETURNING, so a claim or a fenced update selects and locks its rows first, updates them by
// ID, and reads them back, all in one transaction. Change events are stamped at commit with a
// number taken under a lock (see beforeCommit). There is no LISTEN/NOTIFY: wake-ups are hints in
// the process plus polling.
type mysqlDialect struct{}

var _ dialect = mysqlDialect{}

// mysqlDuplicateEntry is MySQL's error number for a duplicate key (ER_DUP_ENTRY).
const mysqlDuplicateEntry = 1062

// mysqlMigrationLockTimeout bounds how long a node waits for another one's migrations.
const mysqlMigrationLockTimeout = 10 * time.Minute

func (mysqlDialect) kind() Kind        { return KindMySQL }
func (mysqlDialect) migrations() fs.FS { return migrations.MySQL() }

// openBeat opens a one-connection pool.
func (mysqlDialect) openBeat(ctx context.Context, _, rawURL string, opts OpenOptions) (*bun.DB, error) {
	return openMySQL(ctx, rawURL, opts)
}

// withMigrationLock holds a named lock (GET_LOCK) on one connection while fn runs; it is named
// after the database, so tests migrating databases of their own never wait for each other.
func (mysqlDialect) withMigrationLock(ctx context.Context, db *bun.DB, fn func() error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("error taking a connection for the migration lock: %w", err)
	}
	defer conn.Close()
	var got *int
	if err := conn.NewRaw("SELECT GET_LOCK(CONCAT('cairn.migrate.', DATABASE()), ?)", int(mysqlMigrationLockTimeout.Seconds())).Scan(ctx, &got); err != nil {
		return fmt.Errorf("error taking the migration lock: %w", err)
	}
	if got == nil || *got != 1 {
		return fmt.Errorf("error taking the migration lock: another node held it for %s", mysqlMigrationLockTimeout)
	}
	defer func() {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK(CONCAT('cairn.migrate.', DATABASE()))")
	}()
	return fn()
}

func (mysqlDialect) tableExists(ctx context.Context, db bun.IDB, name string) (bool, error) {
	var n int
	err := db.NewRaw("SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?", name).Scan(ctx, &n)
	return n > 0, err
}

func (mysqlDialect) capabilities() Capabilities { return Capabilities{SkipLocked: true} }

func (mysqlDialect) castTime(placeholder string) string {
	return "CAST(" + placeholder + " AS DATETIME(6))"
}

// The inserts use Bun's multi-row VALUES: MariaDB returns the IDs (INSERT ... RETURNING); on MySQL
// Bun numbers the rows from the first ID, which Open made sure are consecutive. Rows with much
// data (variables, inputs) go in several statements, each within the packet size.
func (mysqlDialect) insertWorkflows(ctx context.Context, s *Store, rows []*Workflow) error {
	return bunInsertChunked(ctx, s, rows, true)
}
func (mysqlDialect) insertActions(ctx context.Context, s *Store, rows []*Action) error {
	return bunInsertChunked(ctx, s, rows, true)
}
func (mysqlDialect) insertActionVariables(ctx context.Context, s *Store, rows []*ActionVariable) error {
	return bunInsertChunked(ctx, s, rows, false)
}
func (mysqlDialect) insertTaskInstances(ctx context.Context, s *Store, rows []*TaskInstance) error {
	return bunInsertChunked(ctx, s, rows, true)
}
func (mysqlDialect) insertActivityLogs(ctx context.Context, s *Store, rows []*ActivityLog) error {
	return bunInsertChunked(ctx, s, rows, true)
}

// insertSkippingDuplicates turns a duplicate into an update that changes nothing (INSERT IGNORE
// would also swallow errors that are not duplicates); such a row counts as no row affected. It
// turns off the RETURNING Bun adds on MariaDB by itself, as MariaDB would return the stored row of
// a duplicate as if inserted; the ID of an inserted row is the last insert ID.
// A table without an id column names its key in conflictColumns: its first column is set to itself.
func (mysqlDialect) insertSkippingDuplicates(ctx context.Context, s *Store, model any, conflictColumns string, _ bool) (int64, error) {
	col := "id"
	if conflictColumns != "" && !strings.Contains(conflictColumns, ",") {
		col = strings.TrimSpace(conflictColumns)
	}
	res, err := s.idb.NewInsert().Model(model).On("DUPLICATE KEY UPDATE " + col + " = " + col).Returning("NULL").Exec(ctx)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (mysqlDialect) uniqueViolation(err error) bool {
	var myErr *mysql.MySQLError
	return errors.As(err, &myErr) && myErr.Number == mysqlDuplicateEntry
}

// claim selects and locks the due rows (SKIP LOCKED), updates them by ID, and returns the rows it
// read changed as the update changed them.
func (mysqlDialect) claim(ctx context.Context, tx *Store, c claimStatement) ([]*Workflow, error) {
	var wfs []*Workflow
	// claim_group is the generated column of the due index: only claimable workflows have one.
	c.Due, c.DueArgs = "claim_group = ? AND "+c.Due, append([]any{c.Group}, c.DueArgs...)
	due, dueArgs, typed := c.dueOfType()
	q := `SELECT * FROM workflows WHERE ` + due + ` ORDER BY ` + c.Order + ` LIMIT ? FOR UPDATE SKIP LOCKED`
	if !typed {
		// Type by type (claimStatement.byTypeUnion); the rows locked beyond the first Limit are
		// let go, untouched, when the claim commits.
		var union string
		union, dueArgs = c.byTypeUnion("*", " FOR UPDATE SKIP LOCKED")
		q = `SELECT * FROM (` + union + `) AS u ORDER BY ` + c.Order + ` LIMIT ?`
	}
	if err := tx.idb.NewRaw(q, append(dueArgs, c.Limit)...).Scan(ctx, &wfs); err != nil {
		return nil, err
	}
	if len(wfs) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(wfs))
	for i, w := range wfs {
		ids[i] = w.ID
		c.Claimed(w)
	}
	if _, err := tx.idb.NewRaw(`UPDATE workflows SET `+c.Set+` WHERE id IN (?)`, append(append([]any{}, c.SetArgs...), bunIn(ids))...).Exec(ctx); err != nil {
		return nil, err
	}
	return wfs, nil
}

// The errors of a transaction InnoDB rolled back to break a deadlock, or of a statement that
// waited for a lock longer than innodb_lock_wait_timeout (Tx then rolls the whole transaction back).
const (
	mysqlDeadlock        = 1213
	mysqlLockWaitTimeout = 1205
)

func (mysqlDialect) retryable(err error) bool {
	var myErr *mysql.MySQLError
	return errors.As(err, &myErr) && (myErr.Number == mysqlDeadlock || myErr.Number == mysqlLockWaitTimeout)
}

// leaseTasks takes the portable path: MariaDB has no UPDATE ... RETURNING. InnoDB may pick a lease
// to break a deadlock with a transaction writing results or tasks; Tx runs it again then.
func (mysqlDialect) leaseTasks(ctx context.Context, s *Store, l leaseStatement) ([]*RemoteTask, error) {
	return leaseTasksPortable(ctx, s, l)
}

// endTasks takes the portable path: one fenced update per result, then a read.
func (mysqlDialect) endTasks(ctx context.Context, s *Store, ps []RemoteTaskEndParams, now time.Time) ([]*RemoteTask, error) {
	return endTasksPortable(ctx, s, ps, now)
}

// complete locks the rows still held at the claimed version, then joins them to the completions
// in one UPDATE.
func (mysqlDialect) complete(ctx context.Context, s *Store, cs []WorkflowCompletion, now time.Time) ([]int64, error) {
	var written []int64
	err := s.Tx(ctx, func(ctx context.Context, tx *Store) error {
		written = nil // Tx may run this again
		ids := make([]int64, len(cs))
		for i, c := range cs {
			ids[i] = c.ID
		}
		var held []struct {
			ID         int64 `bun:"id"`
			ExecutorID int64 `bun:"executor_id"`
			Version    int   `bun:"version"`
		}
		if err := tx.idb.NewRaw("SELECT id, executor_id, version FROM workflows WHERE id IN (?) AND status = 'EXECUTING' ORDER BY id FOR UPDATE",
			bunIn(ids)).Scan(ctx, &held); err != nil {
			return err
		}
		type fence struct {
			executor int64
			version  int
		}
		holders := make(map[int64]fence, len(held))
		for _, h := range held {
			holders[h.ID] = fence{h.ExecutorID, h.Version}
		}
		rows := make([]mysqlCompletion, 0, len(cs))
		for _, c := range cs {
			if holders[c.ID] != (fence{c.ExecutorID, c.ClaimedVersion}) {
				continue // taken from the executor: nothing is written for it
			}
			written = append(written, c.ID)
			rows = append(rows, mysqlCompletion{ID: c.ID, ExecutorID: c.ExecutorID, Version: c.ClaimedVersion, Status: string(c.Status),
				State: c.State, StateText: c.StateText, NextActivation: mysqlTime(c.NextActivation), Retries: c.Retries,
				Variables: string(c.Variables), WaitSignal: c.WaitSignal, LastError: c.LastError, Finished: mysqlTime(c.Finished),
				KeepClaim: boolInt(c.KeepClaim), StepDeadline: mysqlTime(c.StepDeadline), Steps: c.Steps})
		}
		// A batch with large variables is written in several statements, each within the packet.
		for _, part := range chunks(len(rows), func(i int) int { return rows[i].bytes() }, mysqlStatementBytes) {
			if err := tx.mysqlComplete(ctx, rows[part[0]:part[1]], now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return written, nil
}

// mysqlComplete writes completions whose workflows the transaction holds, in one statement.
func (tx *Store) mysqlComplete(ctx context.Context, rows []mysqlCompletion, now time.Time) error {
	if len(rows) == 0 {
		return nil
	}
	doc, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	// The completions travel as one JSON array that JSON_TABLE turns back into rows (as unnest
	// does on PostgreSQL): one short statement, whatever the number of rows. The WHERE on the IDs
	// keeps it to its own rows: without it a small table is scanned whole, and a multi-table
	// UPDATE waits for the lock of every row it reads, such as the parent a cancel holds while it
	// waits for this child (a deadlock).
	_, err = tx.idb.NewRaw(`UPDATE workflows AS w JOIN JSON_TABLE(?, '$[*]' COLUMNS (
				id BIGINT PATH '$.id', executor_id BIGINT PATH '$.executor_id', claimed_version INT PATH '$.version',
				status VARCHAR(32) PATH '$.status', state VARCHAR(255) PATH '$.state', state_text TEXT PATH '$.state_text',
				next_activation DATETIME(6) PATH '$.next_activation', retries INT PATH '$.retries', variables LONGTEXT PATH '$.variables',
				wait_signal VARCHAR(255) PATH '$.wait_signal', last_error LONGTEXT PATH '$.last_error', finished DATETIME(6) PATH '$.finished',
				keep_claim INT PATH '$.keep_claim', step_deadline DATETIME(6) PATH '$.step_deadline', steps INT PATH '$.steps')) AS v
			ON w.id = v.id AND w.executor_id = v.executor_id AND w.version = v.claimed_version AND w.status = 'EXECUTING'
			SET w.status = v.status, w.state = v.state, w.state_text = v.state_text, w.next_activation = v.next_activation,
				w.retries = v.retries, w.executor_id = CASE WHEN v.keep_claim = 1 THEN v.executor_id ELSE NULL END,
				w.variables = v.variables, w.wait_signal = v.wait_signal, w.last_error = v.last_error,
				w.step_deadline = v.step_deadline, w.finished = v.finished, w.modified = ?, w.version = w.version + 1, w.steps = v.steps
			WHERE w.id IN (?)`,
		string(doc), now, bunIn(ids)).Exec(ctx)
	return err
}

// insertChangeEvents keeps the events until the transaction commits (beforeCommit writes them).
func (mysqlDialect) insertChangeEvents(ctx context.Context, s *Store, events []*ChangeEvent) error {
	if !s.InTx() {
		return s.Tx(ctx, func(ctx context.Context, tx *Store) error { return tx.dialect.insertChangeEvents(ctx, tx, events) })
	}
	s.pending.events = append(s.pending.events, events...)
	return nil
}

// beforeCommit writes the transaction's change events stamped with the next commit number. The
// number comes from one row whose lock the transaction then holds until it commits: transactions
// that write events take numbers in the order they commit, so a reader following (txid, id) never
// passes an event that commits later. Taken last, the lock is held only for the commit itself.
func (mysqlDialect) beforeCommit(ctx context.Context, tx *Store) error {
	events := tx.pending.events
	if len(events) == 0 {
		return nil
	}
	tx.pending.events = nil
	res, err := tx.idb.ExecContext(ctx, "UPDATE change_event_commits SET n = LAST_INSERT_ID(n + 1) WHERE id = 1")
	if err != nil {
		return fmt.Errorf("error numbering the commit of %d change events: %w", len(events), err)
	}
	n, err := res.LastInsertId()
	if err != nil {
		return fmt.Errorf("error numbering the commit of %d change events: %w", len(events), err)
	}
	for _, e := range events {
		e.TxID = n
	}
	if _, err := tx.idb.NewInsert().Model(&events).Value("txid", "?", n).Returning("id").Exec(ctx); err != nil {
		return fmt.Errorf("error writing %d change events: %w", len(events), err)
	}
	return nil
}

func (mysqlDialect) listChangeEvents(ctx context.Context, s *Store, p ChangeEventListParams) ([]*ChangeEvent, error) {
	return scanChangeEvents(ctx, s, `SELECT id, txid, workflow_id, type, action_id, status, state, at FROM change_events
		WHERE (txid > ? OR (txid = ? AND id > ?))`, []any{p.After.TxID, p.After.TxID, p.After.ID}, p)
}

func (mysqlDialect) changeEventHead(ctx context.Context, s *Store) (EventCursor, error) {
	return scanEventCursor(ctx, s, `SELECT txid AS tx_id, id FROM change_events ORDER BY txid DESC, id DESC LIMIT 1`)
}

func (mysqlDialect) changeEventTail(ctx context.Context, s *Store) (EventCursor, error) {
	return scanEventCursor(ctx, s, `SELECT txid AS tx_id, id FROM change_events ORDER BY txid, id LIMIT 1`)
}

// trimChangeEvents reads the keys of the head of the stream first (MySQL cannot delete from a
// table a subquery of the same statement reads), then deletes those before the time by id.
func (mysqlDialect) trimChangeEvents(ctx context.Context, s *Store, before time.Time, limit int) (int, error) {
	var ids []int64
	if err := s.idb.NewRaw(`SELECT h.id FROM (SELECT id, at FROM change_events ORDER BY txid, id LIMIT ?) AS h WHERE h.at < ?`,
		limit, before).Scan(ctx, &ids); err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, nil
	}
	return execCount(ctx, s, `DELETE FROM change_events WHERE id IN (?)`, bun.List(ids))
}

func (mysqlDialect) analyze(ctx context.Context, s *Store) error {
	_, err := s.idb.NewRaw("ANALYZE TABLE workflows, actions, action_variables, task_instances, activity_logs, side_effects, " +
		"signals, change_events, idempotency_keys, executors").Exec(ctx)
	return err
}

// asyncCommit does nothing: InnoDB flushes its log per server (innodb_flush_log_at_trx_commit),
// not per transaction.
func (mysqlDialect) asyncCommit(context.Context, *Store) error { return nil }

// mysqlCompletion is one completion as complete sends it inside a JSON array.
type mysqlCompletion struct {
	ID             int64   `json:"id"`
	ExecutorID     int64   `json:"executor_id"`
	Version        int     `json:"version"`
	Status         string  `json:"status"`
	State          string  `json:"state"`
	StateText      *string `json:"state_text"`
	NextActivation *string `json:"next_activation"`
	Retries        int     `json:"retries"`
	Variables      string  `json:"variables"`
	WaitSignal     *string `json:"wait_signal"`
	LastError      *string `json:"last_error"`
	Finished       *string `json:"finished"`
	KeepClaim      int     `json:"keep_claim"` // 1: keep the claim
	StepDeadline   *string `json:"step_deadline"`
	Steps          int     `json:"steps"`
}

// bytes is about how much of a statement the completion takes.
func (c *mysqlCompletion) bytes() int {
	n := 256 + len(c.State) + len(c.Variables)
	for _, s := range []*string{c.StateText, c.LastError, c.WaitSignal} {
		if s != nil {
			n += len(*s)
		}
	}
	return n
}

// mysqlTime formats an optional time as DATETIME(6) text in UTC.
func mysqlTime(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := UTC(*t).Format("2006-01-02 15:04:05.999999")
	return &s
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sendHints and listenHints are never called: no Listen capability.
func (mysqlDialect) sendHints(context.Context, *Store, []string) error { return nil }
func (mysqlDialect) listenHints(ctx context.Context, _ *Store, _ func(), _ func(string)) error {
	<-ctx.Done()
	return ctx.Err()
}

// estimateRows reads EXPLAIN's rows, times filtered where the server reports it, of the query's
// one table.
func (mysqlDialect) estimateRows(ctx context.Context, s *Store, query string) (int, bool, error) {
	rs, err := s.idb.QueryContext(ctx, "EXPLAIN "+query)
	if err != nil {
		return 0, false, err
	}
	defer rs.Close()
	cols, err := rs.Columns()
	if err != nil {
		return 0, false, err
	}
	est := 0.0
	for rs.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			return 0, false, err
		}
		rows, filtered := 0.0, 100.0
		for i, c := range cols {
			switch strings.ToLower(c) {
			case "rows":
				rows, _ = strconv.ParseFloat(vals[i].String, 64)
			case "filtered":
				if v, err := strconv.ParseFloat(vals[i].String, 64); err == nil {
					filtered = v
				}
			}
		}
		est = max(est, rows*filtered/100)
	}
	if err := rs.Err(); err != nil {
		return 0, false, err
	}
	return int(est), true, nil
}

// statusIndexed: workflows_attention_idx holds the generated attention_status, set for the
// statuses that need attention.
func (mysqlDialect) statusIndexed(st Status) (string, any, bool) {
	return "w.attention_status = ?", st, containsStatus(attentionStatuses, st)
}

// planCost: plain EXPLAIN gives no cost; the count runs.
func (mysqlDialect) planCost(context.Context, *Store, string) (float64, bool, error) {
	return 0, false, nil
}
