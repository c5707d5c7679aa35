package persistence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun/dialect/pgdialect"
)

// PartitionWidth is the time range each partition of a partitioned history table covers.
type PartitionWidth string

// The partition widths.
const (
	PartitionDay  PartitionWidth = "day"
	PartitionWeek PartitionWidth = "week"
)

// ErrPartitionsUnsupported is returned by the partition methods on SQLite and MariaDB, which keep
// row retention.
var ErrPartitionsUnsupported = errors.New("history partitioning needs PostgreSQL (SQLite and MariaDB/MySQL keep row retention)")

// ParsePartitionWidth reads day or week.
func ParsePartitionWidth(s string) (PartitionWidth, error) {
	switch w := PartitionWidth(s); w {
	case PartitionDay, PartitionWeek:
		return w, nil
	}
	return "", fmt.Errorf("the partition width must be day or week, not %q", s)
}

// Duration is the time range one partition covers.
func (w PartitionWidth) Duration() time.Duration {
	if w == PartitionWeek {
		return 7 * 24 * time.Hour
	}
	return 24 * time.Hour
}

// start is the beginning (UTC midnight; Monday for weeks) of the partition holding t.
func (w PartitionWidth) start(t time.Time) time.Time {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	if w == PartitionWeek {
		back := (int(day.Weekday()) + 6) % 7 // days since Monday
		day = day.AddDate(0, 0, -back)
	}
	return day
}

// partitionedTable is a history table that can be partitioned: the column it is partitioned by and
// its primary key and indexes in the partitioned form (the partition column joins every unique key).
type partitionedTable struct {
	name    string
	column  string
	pkey    string
	indexes []string // name, definition after ON <table>
	// added is a column the unpartitioned table lacks, with its definition and how the copy fills it.
	added, addedDef, addedCopy string
}

// partitionedTables are the history tables partitioned by time. Change events are among them, but
// their edge is trimmed by the event trimmer, and their partitions dropped by the event retention.
var partitionedTables = []partitionedTable{
	{name: "actions", column: "at", pkey: "id, at", indexes: []string{"actions_workflow_idx", "(workflow_id, id)"}},
	{name: "action_variables", column: "created", pkey: "workflow_id, action_id, key, created",
		indexes: []string{"action_variables_action_idx", "(action_id)"},
		added:   "created", addedDef: "TIMESTAMPTZ NOT NULL DEFAULT now()",
		addedCopy: "COALESCE((SELECT a.at FROM actions AS a WHERE a.id = t.action_id), now())"},
	{name: "task_instances", column: "started", pkey: "id, started", indexes: []string{"task_instances_workflow_idx", "(workflow_id, id)"}},
	{name: "activity_logs", column: "at", pkey: "id, at", indexes: []string{"activity_logs_workflow_idx", "(workflow_id, id)"}},
	{name: "change_events", column: "at", pkey: "txid, id, at"},
}

// PartitionedHistoryTables returns the tables that PartitionHistory partitions.
func PartitionedHistoryTables() []string {
	var out []string
	for _, t := range partitionedTables {
		out = append(out, t.name)
	}
	return out
}

// partitionComment marks a partitioned history table with its width.
const partitionComment = "cairn history partitioned by "

// partitionLock is the advisory lock key that serializes partitioning and partition maintenance.
const partitionLock = 0x636169726e5054 // "cairnPT"

// HistoryPartitioning returns the width the history tables are partitioned by, or "" when they
// are not (always "" on SQLite and MariaDB).
func (s *Store) HistoryPartitioning(ctx context.Context) (PartitionWidth, error) {
	if s.Kind() != KindPostgres {
		return "", nil
	}
	var comment *string
	if err := s.idb.QueryRowContext(ctx, `SELECT obj_description(c.oid, 'pg_class') FROM pg_class AS c
		JOIN pg_partitioned_table AS p ON p.partrelid = c.oid WHERE c.oid = to_regclass('actions')`).Scan(&comment); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return "", nil
		}
		return "", fmt.Errorf("error reading the history partitioning: %w", err)
	}
	if comment == nil || !strings.HasPrefix(*comment, partitionComment) {
		return "", errors.New("the history tables are partitioned, but not by cairn")
	}
	return ParsePartitionWidth(strings.TrimPrefix(*comment, partitionComment))
}

// PartitionHistoryParams is the input of PartitionHistory.
type PartitionHistoryParams struct {
	Width PartitionWidth
	// Ahead is how many partitions past the current one are made.
	Ahead int
	// Now is the current time (partitions are made from the oldest row's to Now's plus Ahead).
	Now time.Time
}

// PartitionHistory turns the history tables into tables partitioned by time, in one transaction
// that copies every row: the tables are locked (writes and reads wait) for as long as the copy
// takes. It returns how many rows it copied. On tables already partitioned by the same width it
// does nothing; by another width it fails.
func (s *Store) PartitionHistory(ctx context.Context, p PartitionHistoryParams) (int64, error) {
	if s.Kind() != KindPostgres {
		return 0, ErrPartitionsUnsupported
	}
	if _, err := ParsePartitionWidth(string(p.Width)); err != nil {
		return 0, err
	}
	var copied int64
	err := s.Tx(ctx, func(ctx context.Context, tx *Store) error {
		copied = 0
		if _, err := tx.idb.ExecContext(ctx, fmt.Sprintf("SELECT pg_advisory_xact_lock(%d)", partitionLock)); err != nil {
			return err
		}
		current, err := tx.HistoryPartitioning(ctx)
		if err != nil {
			return err
		}
		if current == p.Width {
			return nil
		}
		if current != "" {
			return fmt.Errorf("the history is partitioned by %s already, not %s", current, p.Width)
		}
		var names []string
		for _, t := range partitionedTables {
			names = append(names, t.name)
		}
		if _, err := tx.idb.ExecContext(ctx, "LOCK TABLE "+strings.Join(names, ", ")+" IN ACCESS EXCLUSIVE MODE"); err != nil {
			return err
		}
		for _, t := range partitionedTables {
			n, err := tx.partitionTable(ctx, t, p)
			if err != nil {
				return fmt.Errorf("error partitioning %s: %w", t.name, err)
			}
			copied += n
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("error partitioning the history: %w", err)
	}
	return copied, nil
}

// partitionTable replaces one table by a partitioned copy holding its rows, keeping its name, its
// sequence and its indexes' names.
func (s *Store) partitionTable(ctx context.Context, t partitionedTable, p PartitionHistoryParams) (int64, error) {
	next := t.name + "_partitioned"
	oldestOf := fmt.Sprintf("SELECT min(%s) FROM %s", t.column, t.name)
	if t.added != "" {
		oldestOf = "SELECT min(at) FROM actions" // the copy dates a variable by its action
	}
	var oldest *time.Time
	if err := s.idb.QueryRowContext(ctx, oldestOf).Scan(&oldest); err != nil {
		return 0, err
	}
	stmts := []string{
		fmt.Sprintf("CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (%s)", next, t.name, t.column),
	}
	if t.added != "" {
		stmts[0] = fmt.Sprintf("CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS, %s %s) PARTITION BY RANGE (%s)",
			next, t.name, t.added, t.addedDef, t.column)
	}
	stmts = append(stmts, fmt.Sprintf("CREATE TABLE %s_default PARTITION OF %s DEFAULT", t.name, next))
	for _, stmt := range stmts {
		if _, err := s.idb.ExecContext(ctx, stmt); err != nil {
			return 0, fmt.Errorf("%s: %w", stmt, err)
		}
	}
	from := p.Now
	if oldest != nil && oldest.Before(from) {
		from = *oldest
	}
	for at := p.Width.start(from); !at.After(p.Width.start(p.Now).Add(time.Duration(p.Ahead) * p.Width.Duration())); at = at.Add(p.Width.Duration()) {
		if err := s.createPartition(ctx, t, next, p.Width, at); err != nil {
			return 0, err
		}
	}
	var columns []string
	if err := s.idb.NewRaw(`SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?
		ORDER BY ordinal_position`, t.name).Scan(ctx, &columns); err != nil {
		return 0, err
	}
	into, from2 := strings.Join(columns, ", "), "t."+strings.Join(columns, ", t.")
	if t.added != "" {
		into += ", " + t.added
		from2 += ", " + t.addedCopy
	}
	copyRows := fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s AS t", next, into, from2, t.name)
	res, err := s.idb.ExecContext(ctx, copyRows)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", copyRows, err)
	}
	n, _ := res.RowsAffected()
	// The sequences are looked up by the table's own columns only: asked of information_schema's
	// rows, pg_get_serial_sequence may run on any table's columns before the filters that pick
	// this table's (the planner orders them as the catalog's size suggests), and fails on a
	// column this table lacks ("column "created" of relation "action_variables" does not exist",
	// seen in CI with many schemas in one database).
	var seqs []string
	if err := s.idb.NewRaw(`SELECT seq FROM (SELECT pg_get_serial_sequence(?, c) AS seq FROM unnest(?::text[]) AS c) AS s
		WHERE seq IS NOT NULL`, t.name, pgdialect.Array(columns)).Scan(ctx, &seqs); err != nil {
		return 0, fmt.Errorf("reading the sequences of %s: %w", t.name, err)
	}
	after := []string{}
	for _, seq := range seqs {
		after = append(after, fmt.Sprintf("ALTER SEQUENCE %s OWNED BY %s.id", seq, next))
	}
	after = append(after,
		"DROP TABLE "+t.name,
		fmt.Sprintf("ALTER TABLE %s RENAME TO %s", next, t.name),
		fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT %s_pkey PRIMARY KEY (%s)", t.name, t.name, t.pkey))
	for i := 0; i+1 < len(t.indexes); i += 2 {
		after = append(after, fmt.Sprintf("CREATE INDEX %s ON %s %s", t.indexes[i], t.name, t.indexes[i+1]))
	}
	after = append(after, fmt.Sprintf("COMMENT ON TABLE %s IS '%s%s'", t.name, partitionComment, p.Width))
	for _, stmt := range after {
		if _, err := s.idb.ExecContext(ctx, stmt); err != nil {
			return 0, fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return n, nil
}

// partitionName is the name of the partition of table starting at start.
func partitionName(table string, start time.Time) string {
	return table + "_p" + start.Format("20060102")
}

// createPartition makes the partition of parent (named after table) that starts at start, unless
// it exists. Rows of its range that the DEFAULT partition caught move into it.
func (s *Store) createPartition(ctx context.Context, t partitionedTable, parent string, w PartitionWidth, start time.Time) error {
	from, to := start.Format(time.RFC3339), start.Add(w.Duration()).Format(time.RFC3339)
	inRange := fmt.Sprintf("%s >= '%s' AND %s < '%s'", t.column, from, t.column, to)
	var stragglers bool
	straggling := fmt.Sprintf("SELECT EXISTS (SELECT 1 FROM %s_default WHERE %s)", t.name, inRange)
	if err := s.idb.QueryRowContext(ctx, straggling).Scan(&stragglers); err != nil {
		return fmt.Errorf("%s: %w", straggling, err)
	}
	stmts := []string{fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s PARTITION OF %s FOR VALUES FROM ('%s') TO ('%s')",
		partitionName(t.name, start), parent, from, to)}
	if stragglers {
		stmts = []string{
			fmt.Sprintf("CREATE TEMP TABLE cairn_moving ON COMMIT DROP AS SELECT * FROM %s_default WHERE %s", t.name, inRange),
			fmt.Sprintf("DELETE FROM %s_default WHERE %s", t.name, inRange),
			stmts[0],
			fmt.Sprintf("INSERT INTO %s SELECT * FROM cairn_moving", parent),
			"DROP TABLE cairn_moving",
		}
	}
	for _, stmt := range stmts {
		if _, err := s.idb.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}

// CheckRetention refuses a retention shorter than a partition: the partition holding the present
// would then hold most of what is kept, and expiring it would be the row-by-row deletes that
// partitions are there to avoid.
func (w PartitionWidth) CheckRetention(retention time.Duration) error {
	if retention > 0 && retention < w.Duration() {
		return fmt.Errorf("a retention of %s is shorter than a history partition (a %s): the present partition would hold most "+
			"rows, expired one by one; use a retention of at least %s, or partitions by day", retention, w, w.Duration())
	}
	return nil
}

// HistoryPartition is one partition of a partitioned history table.
type HistoryPartition struct {
	Table, Name string
	// Start and End bound the times it holds (End excluded); zero for the DEFAULT partition.
	Start, End time.Time
}

// HistoryPartitionList returns the partitions of the history tables, oldest first per table.
func (s *Store) HistoryPartitionList(ctx context.Context) ([]HistoryPartition, error) {
	w, err := s.HistoryPartitioning(ctx)
	if err != nil || w == "" {
		return nil, err
	}
	var rows []struct {
		Parent string `bun:"parent"`
		Name   string `bun:"name"`
	}
	if err := s.idb.NewRaw(`SELECT p.relname AS parent, c.relname AS name FROM pg_inherits AS i
		JOIN pg_class AS c ON c.oid = i.inhrelid JOIN pg_class AS p ON p.oid = i.inhparent
		JOIN pg_namespace AS n ON n.oid = p.relnamespace
		WHERE n.nspname = current_schema() AND p.relname IN (?) ORDER BY p.relname, c.relname`,
		bunIn(PartitionedHistoryTables())).Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("error listing the history partitions: %w", err)
	}
	out := make([]HistoryPartition, 0, len(rows))
	for _, r := range rows {
		hp := HistoryPartition{Table: r.Parent, Name: r.Name}
		if day, ok := strings.CutPrefix(r.Name, r.Parent+"_p"); ok {
			if start, err := time.Parse("20060102", day); err == nil {
				hp.Start, hp.End = start, start.Add(w.Duration())
			}
		}
		out = append(out, hp)
	}
	return out, nil
}

// HistoryPartitionsPrepare makes the partitions of every history table from the one holding now to
// ahead partitions past it, and returns the names of those it made.
func (s *Store) HistoryPartitionsPrepare(ctx context.Context, now time.Time, ahead int) ([]string, error) {
	var made []string
	err := s.Tx(ctx, func(ctx context.Context, tx *Store) error {
		made = nil
		w, err := tx.lockPartitions(ctx)
		if err != nil || w == "" {
			return err
		}
		have, err := tx.HistoryPartitionList(ctx)
		if err != nil {
			return err
		}
		exists := map[string]bool{}
		for _, p := range have {
			exists[p.Name] = true
		}
		for _, t := range partitionedTables {
			for i := 0; i <= ahead; i++ {
				start := w.start(now).Add(time.Duration(i) * w.Duration())
				if exists[partitionName(t.name, start)] {
					continue
				}
				if err := tx.createPartition(ctx, t, t.name, w, start); err != nil {
					return err
				}
				made = append(made, partitionName(t.name, start))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("error making history partitions: %w", err)
	}
	return made, nil
}

// lockPartitions takes the partition maintenance's lock for the transaction, with a short lock
// timeout (a partition's DDL waits for every statement on its table: better to try again later
// than to queue the hot path behind it), and returns the width ("" when not partitioned).
func (s *Store) lockPartitions(ctx context.Context) (PartitionWidth, error) {
	if s.Kind() != KindPostgres {
		return "", ErrPartitionsUnsupported
	}
	if _, err := s.idb.ExecContext(ctx, "SET LOCAL lock_timeout = '2s'"); err != nil {
		return "", err
	}
	if _, err := s.idb.ExecContext(ctx, fmt.Sprintf("SELECT pg_advisory_xact_lock(%d)", partitionLock)); err != nil {
		return "", err
	}
	return s.HistoryPartitioning(ctx)
}

// HistoryExpireParams is the input of HistoryPartitionsExpire.
type HistoryExpireParams struct {
	// Before: history rows (but change events) written before this go; zero keeps them.
	Before time.Time
	// EventsBefore: partitions of change events wholly before this go; zero keeps them. (The rows
	// at the edge are the event trimmer's.)
	EventsBefore time.Time
	// EdgeLimit caps how many rows of each table one call deletes from the partitions that hold
	// rows on both sides of Before (and from the DEFAULT partition).
	EdgeLimit int
}

// HistoryExpireResult says what HistoryPartitionsExpire removed.
type HistoryExpireResult struct {
	Dropped []string
	Deleted int
}

// HistoryPartitionsExpire drops the partitions whose whole range lies before the cut-off, then
// deletes the older rows of the partitions on the edge (and of the DEFAULT partition), a bounded
// amount per table.
func (s *Store) HistoryPartitionsExpire(ctx context.Context, p HistoryExpireParams) (HistoryExpireResult, error) {
	var out HistoryExpireResult
	err := s.Tx(ctx, func(ctx context.Context, tx *Store) error {
		out = HistoryExpireResult{}
		w, err := tx.lockPartitions(ctx)
		if err != nil || w == "" {
			return err
		}
		have, err := tx.HistoryPartitionList(ctx)
		if err != nil {
			return err
		}
		for _, part := range have {
			before := p.Before
			if part.Table == "change_events" {
				before = p.EventsBefore
			}
			if before.IsZero() || part.End.IsZero() || part.End.After(before) {
				continue
			}
			if _, err := tx.idb.ExecContext(ctx, "DROP TABLE "+part.Name); err != nil {
				return err
			}
			out.Dropped = append(out.Dropped, part.Name)
		}
		return nil
	})
	if err != nil {
		return HistoryExpireResult{}, fmt.Errorf("error dropping history partitions: %w", err)
	}
	if p.Before.IsZero() {
		return out, nil
	}
	limit := max(p.EdgeLimit, 1)
	for _, t := range partitionedTables {
		if t.name == "change_events" {
			continue
		}
		// Only the partitions whose range starts before the cut-off are read (partition pruning).
		n, err := execCount(ctx, s, fmt.Sprintf("DELETE FROM %[1]s WHERE (%[2]s) IN (SELECT %[2]s FROM %[1]s WHERE %[3]s < ? LIMIT ?)",
			t.name, t.pkey, t.column), UTC(p.Before), limit)
		if err != nil {
			return out, fmt.Errorf("error deleting expired rows of %s: %w", t.name, err)
		}
		out.Deleted += n
	}
	return out, nil
}

// purgedTables returns the history tables WorkflowPurge deletes from: with partitioned history,
// the partitioned tables are left to HistoryPartitionsExpire (every row of an ended workflow is
// older than its end, so it goes with its partition or at the edge).
func (s *Store) purgedTables(ctx context.Context) ([]string, error) {
	w, err := s.HistoryPartitioning(ctx)
	if err != nil || w == "" {
		return historyTables, err
	}
	return slices.DeleteFunc(slices.Clone(historyTables), func(t string) bool {
		return slices.Contains(PartitionedHistoryTables(), t)
	}), nil
}
