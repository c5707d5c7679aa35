package persistence

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/cairnflow/cairn/internal/batch"
)

// TopicTasks: remote tasks of the function in the payload became available (created, or their
// lease ran out); long-polling workers look again. An empty payload means any function.
const TopicTasks = "tasks"

// RemoteTaskStatus is where a remote task stands.
type RemoteTaskStatus string

// The remote task statuses.
const (
	// RemoteTaskPending: waiting for a worker to lease it.
	RemoteTaskPending RemoteTaskStatus = "PENDING"
	// RemoteTaskLeased: a worker holds it until its lease deadline.
	RemoteTaskLeased RemoteTaskStatus = "LEASED"
	// RemoteTaskSucceeded: a worker completed it with an output.
	RemoteTaskSucceeded RemoteTaskStatus = "SUCCEEDED"
	// RemoteTaskFailed: a worker failed it, or its leases ran out more often than its policy allows.
	RemoteTaskFailed RemoteTaskStatus = "FAILED"
	// RemoteTaskCancelled: its workflow moved on without it (a newer task took its place).
	RemoteTaskCancelled RemoteTaskStatus = "CANCELLED"
)

// RemoteTask is one call of a function served by a remote worker, for one step of a workflow.
type RemoteTask struct {
	bun.BaseModel `bun:"table:remote_tasks,alias:rt"`

	ID            int64            `bun:"id,pk,autoincrement"`
	Function      string           `bun:"function,notnull"`
	WorkflowID    int64            `bun:"workflow_id,notnull"`
	State         string           `bun:"state,notnull"`
	ExecutorGroup string           `bun:"executor_group,notnull"`
	Input         json.RawMessage  `bun:"input,type:jsonb,notnull"`
	Status        RemoteTaskStatus `bun:"status,notnull"`
	// Attempt counts the runs of the step so far, the current lease's included (from 1 once leased).
	Attempt       int             `bun:"attempt,notnull"`
	MaxAttempts   int             `bun:"max_attempts,notnull"`
	LeaseToken    *string         `bun:"lease_token"`
	LeaseMs       int             `bun:"lease_ms,notnull"`
	LeaseDeadline *time.Time      `bun:"lease_deadline"`
	Worker        *string         `bun:"worker"`
	Output        json.RawMessage `bun:"output,type:jsonb"`
	Error         json.RawMessage `bun:"error,type:jsonb"`
	Retryable     bool            `bun:"retryable,notnull"`
	Created       time.Time       `bun:"created,notnull"`
	Leased        *time.Time      `bun:"leased"`
	Finished      *time.Time      `bun:"finished"`
	Consumed      *time.Time      `bun:"consumed"`
}

// Ended reports whether a worker's result (or the last expired lease) is in.
func (t *RemoteTask) Ended() bool {
	return t.Status == RemoteTaskSucceeded || t.Status == RemoteTaskFailed
}

// RemoteWorker is a worker that polled for tasks, as the API lists it.
type RemoteWorker struct {
	bun.BaseModel `bun:"table:remote_workers,alias:rw"`

	Name      string    `bun:"name,pk"`
	Functions string    `bun:"functions,notnull"`
	LastPoll  time.Time `bun:"last_poll,notnull"`
	// Held counts the tasks it holds a live lease on (read, not stored).
	Held int `bun:"held,scanonly"`
}

// RemoteTaskCreateMany replaces each workflow's task not yet recorded (if any: it is cancelled)
// by a new pending one, in two statements. It runs inside the transaction that puts the workflows
// to WAITING.
func (s *Store) RemoteTaskCreateMany(ctx context.Context, ts []*RemoteTask) error {
	if len(ts) == 0 {
		return nil
	}
	now := Now()
	ids := make([]int64, len(ts))
	for i, t := range ts {
		ids[i] = t.WorkflowID
		t.Status, t.Created = RemoteTaskPending, now
	}
	if _, err := s.idb.NewUpdate().Model((*RemoteTask)(nil)).
		Set("status = CASE WHEN status IN (?, ?) THEN ? ELSE status END", RemoteTaskPending, RemoteTaskLeased, RemoteTaskCancelled).
		Set("lease_token = NULL").Set("consumed = ?", now).
		Where("workflow_id IN (?) AND consumed IS NULL", bunIn(ids)).Exec(ctx); err != nil {
		return fmt.Errorf("error cancelling the earlier remote tasks of %d workflows: %w", len(ts), err)
	}
	if _, err := s.idb.NewInsert().Model(&ts).Returning("id").Exec(ctx); err != nil {
		return fmt.Errorf("error creating %d remote tasks: %w", len(ts), err)
	}
	return nil
}

// RemoteTaskCreate is RemoteTaskCreateMany for one task.
func (s *Store) RemoteTaskCreate(ctx context.Context, t *RemoteTask) error {
	return s.RemoteTaskCreateMany(ctx, []*RemoteTask{t})
}

// RemoteTaskCurrent returns a workflow's newest task whose result its workflow has not recorded
// yet, or ErrNotFound. Outside a transaction, the reads of concurrently running steps share one
// statement (as their side effects do): every remote step reads its task, and a busy pool must not
// spend a pooled connection on each.
func (s *Store) RemoteTaskCurrent(ctx context.Context, workflowID int64) (*RemoteTask, error) {
	var t *RemoteTask
	var err error
	if s.InTx() {
		var ts []*RemoteTask
		if ts, err = s.remoteTaskCurrentMany(ctx, []int64{workflowID}); err == nil {
			t = ts[0]
		}
	} else {
		t, err = s.remoteCurrentBatches().Do(ctx, workflowID)
	}
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, notFound("remote task of workflow", workflowID)
	}
	return t, nil
}

// currentBatches holds the batcher of RemoteTaskCurrent per database.
var currentBatches sync.Map // *bun.DB → *batch.Group[int64, *RemoteTask]

func (s *Store) remoteCurrentBatches() *batch.Group[int64, *RemoteTask] {
	if g, ok := currentBatches.Load(s.db); ok {
		return g.(*batch.Group[int64, *RemoteTask])
	}
	g, _ := currentBatches.LoadOrStore(s.db, &batch.Group[int64, *RemoteTask]{
		Leaders: max(1, s.db.DB.Stats().MaxOpenConnections/4), MaxBatch: 500, Run: batch.Whole(s.remoteTaskCurrentMany)})
	return g.(*batch.Group[int64, *RemoteTask])
}

// remoteTaskCurrentMany reads the current task of each workflow (nil at its index when none).
func (s *Store) remoteTaskCurrentMany(ctx context.Context, workflowIDs []int64) ([]*RemoteTask, error) {
	var found []*RemoteTask
	if err := s.idb.NewSelect().Model(&found).Where("workflow_id IN (?) AND consumed IS NULL", bunIn(workflowIDs)).
		OrderExpr("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("error reading the remote tasks of %d workflows: %w", len(workflowIDs), err)
	}
	newest := make(map[int64]*RemoteTask, len(found))
	for _, t := range found {
		newest[t.WorkflowID] = t // ordered by id: the last one wins
	}
	out := make([]*RemoteTask, len(workflowIDs))
	for i, id := range workflowIDs {
		out[i] = newest[id]
	}
	return out, nil
}

// RemoteTaskGet returns a task by ID.
func (s *Store) RemoteTaskGet(ctx context.Context, id int64) (*RemoteTask, error) {
	t := new(RemoteTask)
	if err := s.idb.NewSelect().Model(t).Where("id = ?", id).Scan(ctx); err != nil {
		return nil, noRows(err, "remote task", id)
	}
	return t, nil
}

// RemoteTaskGetMany returns the tasks with the given IDs that exist, in ID order.
func (s *Store) RemoteTaskGetMany(ctx context.Context, ids []int64) ([]*RemoteTask, error) {
	return getByIDs[RemoteTask](ctx, s, ids, "remote tasks")
}

// RemoteTaskConsume marks tasks as recorded by their workflows (in the step's completion).
func (s *Store) RemoteTaskConsume(ctx context.Context, ids []int64, now time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := s.idb.NewUpdate().Model((*RemoteTask)(nil)).Set("consumed = ?", UTC(now)).
		Where("id IN (?) AND consumed IS NULL", bunIn(ids)).Exec(ctx); err != nil {
		return fmt.Errorf("error recording %d remote tasks: %w", len(ids), err)
	}
	return nil
}

// RemoteTaskEndedAmong returns, of the given tasks, those that ended (a worker's result is in).
func (s *Store) RemoteTaskEndedAmong(ctx context.Context, ids []int64) ([]*RemoteTask, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var out []*RemoteTask
	if err := s.idb.NewSelect().Model(&out).Where("id IN (?) AND status IN (?, ?)", bunIn(ids), RemoteTaskSucceeded, RemoteTaskFailed).
		Scan(ctx); err != nil {
		return nil, fmt.Errorf("error reading remote tasks: %w", err)
	}
	return out, nil
}

// RemoteTaskLeaseParams is the input of RemoteTaskLease.
type RemoteTaskLeaseParams struct {
	Functions []string
	Limit     int
	// Token is the secret every task leased by this call gets (with its ID it makes the worker's token).
	Token  string
	Lease  time.Duration
	Worker string
	Now    time.Time
}

// RemoteTaskLease leases up to Limit pending tasks of the functions, oldest first, and returns
// them with attempt + 1, in ID order. Concurrent pollers never get the same task: PostgreSQL and
// SQLite lease in one UPDATE ... RETURNING (PostgreSQL locking the rows with SKIP LOCKED, SQLite
// being the only writer); MariaDB reads the rows with SKIP LOCKED, then updates and reads them by
// ID. A lease need not wait for the disk: one lost in a crash leaves its task pending, and its
// worker's result gets CONFLICT, as after an expired lease.
func (s *Store) RemoteTaskLease(ctx context.Context, p RemoteTaskLeaseParams) ([]*RemoteTask, error) {
	if p.Limit <= 0 || len(p.Functions) == 0 {
		return nil, nil
	}
	now := UTC(p.Now)
	l := leaseStatement{
		Set:       "status = ?, lease_token = ?, lease_ms = ?, lease_deadline = ?, worker = ?, leased = ?, attempt = attempt + 1",
		SetArgs:   []any{RemoteTaskLeased, p.Token, int(p.Lease / time.Millisecond), now.Add(p.Lease), p.Worker, now},
		Functions: slices.Compact(slices.Sorted(slices.Values(p.Functions))),
		Limit:     p.Limit,
	}
	out, err := s.dialect.leaseTasks(ctx, s, l)
	if err != nil {
		return nil, fmt.Errorf("error leasing remote tasks: %w", err)
	}
	slices.SortFunc(out, func(a, b *RemoteTask) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// leaseStatement is a lease of remote tasks in parts each dialect assembles: SET the lease's
// columns on the pending tasks of Functions, oldest first, at most Limit.
type leaseStatement struct {
	Set       string
	SetArgs   []any
	Functions []string
	Limit     int
}

// pendingByFunction is the oldest pending tasks of one function (the placeholder) in the order of
// remote_tasks_pending_idx ((status,) function, created, id), its predicate named word for word. A lease reads
// them function by function and takes the oldest of all. Read as one range ordered by ID, the
// pending tasks of a burst were found by walking the primary key over every task leased before
// them, whenever the statistics (taken while the burst was all pending) made that look cheap: a
// walk that grew with each lease, 25 ms a lease of 100 halfway through 100,000.
const pendingByFunction = `SELECT %s FROM remote_tasks WHERE status = 'PENDING' AND function = %s ORDER BY created, id LIMIT ?`

// leaseTasksPortable leases in a transaction of three statements any database runs: read the IDs
// with the dialect's SKIP LOCKED lock, update them, read them back.
func leaseTasksPortable(ctx context.Context, s *Store, l leaseStatement) ([]*RemoteTask, error) {
	var out []*RemoteTask
	err := s.Tx(ctx, func(ctx context.Context, tx *Store) error {
		out = nil
		if err := tx.AsyncCommit(ctx); err != nil {
			return err
		}
		ids, err := leaseCandidates(ctx, tx, l)
		if err != nil || len(ids) == 0 {
			return err
		}
		if _, err := tx.idb.NewUpdate().Model((*RemoteTask)(nil)).Set(l.Set, l.SetArgs...).Where("id IN (?)", bunIn(ids)).Exec(ctx); err != nil {
			return err
		}
		return tx.idb.NewSelect().Model(&out).Where("id IN (?)", bunIn(ids)).OrderExpr("id").Scan(ctx)
	})
	return out, err
}

// leaseCandidate is a pending task a lease may take, with its place in the order of leases.
type leaseCandidate struct {
	ID      int64     `bun:"id"`
	Created time.Time `bun:"created"`
}

// leaseCandidates locks, with SKIP LOCKED, each function's oldest pending tasks (pendingByFunction,
// one part of a UNION ALL a function, each an ordered range of the index) and returns the oldest
// of them all, at most l.Limit. Read as one range of several functions, every lease sorted all
// their pending tasks. The others it locked are released when the transaction ends.
func leaseCandidates(ctx context.Context, tx *Store, l leaseStatement) ([]int64, error) {
	lock := tx.rowLock(true)
	if lock != "" {
		lock = " FOR " + lock
	}
	parts := make([]string, len(l.Functions))
	var args []any
	for i, fn := range l.Functions {
		parts[i] = "(" + fmt.Sprintf(pendingByFunction, "id, created", "?") + lock + ")"
		args = append(args, fn, l.Limit)
	}
	var cands []leaseCandidate
	if err := tx.idb.NewRaw(strings.Join(parts, " UNION ALL "), args...).Scan(ctx, &cands); err != nil {
		return nil, err
	}
	slices.SortFunc(cands, func(a, b leaseCandidate) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID))
	})
	ids := make([]int64, 0, min(len(cands), l.Limit))
	for _, c := range cands[:min(len(cands), l.Limit)] {
		ids = append(ids, c.ID)
	}
	return ids, nil
}

// RemoteTaskHeartbeat extends a live lease by its length and returns the new deadline, or
// ErrConflict when the token no longer holds the task.
func (s *Store) RemoteTaskHeartbeat(ctx context.Context, id int64, token string, now time.Time) (time.Time, error) {
	now = UTC(now)
	var rows []struct {
		LeaseMs int `bun:"lease_ms"`
	}
	err := s.Tx(ctx, func(ctx context.Context, tx *Store) error {
		rows = nil // Tx may run this again
		q := tx.idb.NewSelect().Model((*RemoteTask)(nil)).Column("lease_ms").
			Where("id = ? AND lease_token = ? AND status = ? AND lease_deadline >= ?", id, token, RemoteTaskLeased, now)
		if err := tx.forUpdate(q, false).Scan(ctx, &rows); err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		_, err := tx.idb.NewUpdate().Model((*RemoteTask)(nil)).Set("lease_deadline = ?", now.Add(time.Duration(rows[0].LeaseMs)*time.Millisecond)).
			Where("id = ?", id).Exec(ctx)
		return err
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("error extending the lease of remote task %d: %w", id, err)
	}
	if len(rows) == 0 {
		return time.Time{}, fmt.Errorf("remote task %d: the lease is lost: %w", id, ErrConflict)
	}
	return now.Add(time.Duration(rows[0].LeaseMs) * time.Millisecond), nil
}

// RemoteTaskEndParams is the input of RemoteTaskEnd.
type RemoteTaskEndParams struct {
	ID        int64
	Token     string
	Status    RemoteTaskStatus // SUCCEEDED or FAILED
	Output    json.RawMessage
	Error     json.RawMessage
	Retryable bool
	Now       time.Time
	// Functions, when not nil, are the functions the caller may serve (a worker token's): a task
	// of another function is left as it is, like one whose lease is lost. The check is part of the
	// fenced update, so an authorized result costs no read of its task.
	Functions []string
}

// RemoteTaskEnd records a worker's result, only while its token holds a live lease on the task
// (a fenced update), and returns the task as it now is; ErrConflict when the token does not.
func (s *Store) RemoteTaskEnd(ctx context.Context, p RemoteTaskEndParams) (*RemoteTask, error) {
	out, err := s.RemoteTaskEndMany(ctx, []RemoteTaskEndParams{p}, p.Now)
	if err != nil {
		return nil, fmt.Errorf("error ending remote task %d: %w", p.ID, err)
	}
	if out[0] == nil {
		return nil, fmt.Errorf("remote task %d: the lease is lost or the task has ended: %w", p.ID, ErrConflict)
	}
	return out[0], nil
}

// RemoteTaskEndMany records many workers' results, each only while its token holds a live lease
// on its task (fenced), and returns, per result, the task as it now is, or nil where the token did
// not hold it (a conflict). PostgreSQL and SQLite write them all in one UPDATE ... FROM (VALUES
// ...) RETURNING; MariaDB in a transaction of one fenced update per result. Each task ID may
// appear once.
func (s *Store) RemoteTaskEndMany(ctx context.Context, ps []RemoteTaskEndParams, now time.Time) ([]*RemoteTask, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	rows, err := s.dialect.endTasks(ctx, s, ps, UTC(now))
	if err != nil {
		return nil, fmt.Errorf("error ending %d remote tasks: %w", len(ps), err)
	}
	byID := make(map[int64]*RemoteTask, len(rows))
	for _, t := range rows {
		byID[t.ID] = t
	}
	out := make([]*RemoteTask, len(ps))
	for i, p := range ps {
		out[i] = byID[p.ID]
	}
	return out, nil
}

// endTasksValues writes the statement that ends tasks in one UPDATE of remote_tasks joined to a
// VALUES list v(id, token, status, output, error, retryable, fns), with cast turning each
// placeholder into the column's type where the database cannot infer it; table is the updated
// table (with its alias), target the name the conditions give it, allowed the condition that the
// task's function is in the JSON array v.fns, and returning the RETURNING list.
func endTasksValues(ps []RemoteTaskEndParams, now time.Time, cast func(placeholder, typ string) string, table, target, allowed, returning string) (string, []any) {
	var b strings.Builder
	args := make([]any, 0, len(ps)*7+3)
	b.WriteString("WITH v(id, token, status, output, error, retryable, fns) AS (VALUES ")
	for i, p := range ps {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%s, %s, %s, %s, %s, %s, %s)", cast("?", "bigint"), cast("?", "text"), cast("?", "text"),
			cast("?", "jsonb"), cast("?", "jsonb"), cast("?", "boolean"), cast("?", "jsonb"))
		args = append(args, p.ID, p.Token, string(p.Status), nullJSON(p.Output), nullJSON(p.Error), p.Retryable, functionsJSON(p.Functions))
	}
	b.WriteString(") UPDATE " + table +
		" SET status = v.status, output = v.output, error = v.error, retryable = v.retryable, finished = ?, lease_token = NULL FROM v WHERE " +
		target + ".id = v.id AND " + target + ".lease_token = v.token AND " + target + ".status = ? AND " + target +
		".lease_deadline >= ? AND (v.fns IS NULL OR " + allowed + ") RETURNING " + returning)
	args = append(args, now, RemoteTaskLeased, now)
	return b.String(), args
}

// endTasksPortable ends tasks in a transaction of one fenced update per result, then reads back
// the tasks it ended.
func endTasksPortable(ctx context.Context, s *Store, ps []RemoteTaskEndParams, now time.Time) ([]*RemoteTask, error) {
	var rows []*RemoteTask
	err := s.Tx(ctx, func(ctx context.Context, tx *Store) error {
		rows = nil
		var ended []int64
		for _, p := range ps {
			if p.Functions != nil && len(p.Functions) == 0 {
				continue // the caller may serve no function
			}
			q := tx.idb.NewUpdate().Model((*RemoteTask)(nil)).
				Set("status = ?", p.Status).Set("output = ?", nullJSON(p.Output)).Set("error = ?", nullJSON(p.Error)).
				Set("retryable = ?", p.Retryable).Set("finished = ?", now).Set("lease_token = NULL").
				Where("id = ? AND lease_token = ? AND status = ? AND lease_deadline >= ?", p.ID, p.Token, RemoteTaskLeased, now)
			if p.Functions != nil {
				q = q.Where("function IN (?)", bunIn(p.Functions))
			}
			res, err := q.Exec(ctx)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 1 {
				ended = append(ended, p.ID)
			}
		}
		if len(ended) == 0 {
			return nil
		}
		return tx.idb.NewSelect().Model(&rows).Where("id IN (?)", bunIn(ended)).Scan(ctx)
	})
	return rows, err
}

// functionsJSON is the functions a result's caller may serve as a JSON array, or NULL for any.
func functionsJSON(fns []string) any {
	if fns == nil {
		return nil
	}
	b, _ := json.Marshal(fns) // strings always encode
	return string(b)
}

// nullJSON keeps an empty value NULL.
func nullJSON(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return string(raw)
}

// RemoteTaskExpireLeases ends the leases past their deadline: a task with attempts left becomes
// PENDING again (re-offered, its next lease attempt + 1), the others FAILED with expired, a
// retryable false, and the error given. It returns the tasks it changed, as they now are.
func (s *Store) RemoteTaskExpireLeases(ctx context.Context, now time.Time, expired json.RawMessage, limit int) ([]*RemoteTask, error) {
	now = UTC(now)
	var out []*RemoteTask
	err := s.Tx(ctx, func(ctx context.Context, tx *Store) error {
		out = nil // Tx may run this again
		var ids []int64
		q := tx.idb.NewSelect().Model((*RemoteTask)(nil)).Column("id").
			Where("status = ? AND lease_deadline < ?", RemoteTaskLeased, now).OrderExpr("lease_deadline").Limit(int64(limit))
		if err := tx.forUpdate(q, true).Scan(ctx, &ids); err != nil || len(ids) == 0 {
			return err
		}
		if _, err := tx.idb.NewUpdate().Model((*RemoteTask)(nil)).Set("status = ?", RemoteTaskPending).Set("lease_token = NULL").
			Where("id IN (?) AND attempt < max_attempts", bunIn(ids)).Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.idb.NewUpdate().Model((*RemoteTask)(nil)).Set("status = ?", RemoteTaskFailed).Set("lease_token = NULL").
			Set("error = ?", nullJSON(expired)).Set("finished = ?", now).
			Where("id IN (?) AND attempt >= max_attempts", bunIn(ids)).Exec(ctx); err != nil {
			return err
		}
		return tx.idb.NewSelect().Model(&out).Where("id IN (?)", bunIn(ids)).OrderExpr("id").Scan(ctx)
	})
	if err != nil {
		return nil, fmt.Errorf("error ending expired leases of remote tasks: %w", err)
	}
	return out, nil
}

// RemoteTaskWaiting counts the pending tasks per function.
func (s *Store) RemoteTaskWaiting(ctx context.Context) (map[string]int, error) {
	var rows []struct {
		Function string `bun:"function"`
		N        int    `bun:"n"`
	}
	if err := s.idb.NewSelect().Model((*RemoteTask)(nil)).Column("function").ColumnExpr("count(*) AS n").
		Where("status = ?", RemoteTaskPending).Group("function").Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("error counting waiting remote tasks: %w", err)
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.Function] = r.N
	}
	return out, nil
}

// RemoteWorkerSeen records that a worker polled for some functions: an update of its row, or the
// row when there is none yet (a concurrent first poll of the same name wins; the next poll updates).
func (s *Store) RemoteWorkerSeen(ctx context.Context, name string, functions []string, now time.Time) error {
	w := &RemoteWorker{Name: name, Functions: strings.Join(functions, ","), LastPoll: UTC(now)}
	res, err := s.idb.NewUpdate().Model(w).Column("functions", "last_poll").WherePK().Exec(ctx)
	if err == nil {
		if n, _ := res.RowsAffected(); n == 0 {
			if _, err = s.idb.NewInsert().Model(w).Exec(ctx); err != nil && s.dialect.uniqueViolation(err) {
				err = nil // a concurrent first poll of the same name inserted it
			}
		}
	}
	if err != nil {
		return fmt.Errorf("error recording remote worker %q: %w", name, err)
	}
	return nil
}

// RemoteWorkerList returns the workers that polled, by name, with the live leases each holds.
func (s *Store) RemoteWorkerList(ctx context.Context, now time.Time) ([]*RemoteWorker, error) {
	var out []*RemoteWorker
	err := s.idb.NewSelect().Model(&out).ColumnExpr("rw.*").
		ColumnExpr("(SELECT count(*) FROM remote_tasks AS t WHERE t.worker = rw.name AND t.status = ? AND t.lease_deadline >= ?) AS held",
			RemoteTaskLeased, UTC(now)).
		OrderExpr("rw.name").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("error listing remote workers: %w", err)
	}
	return out, nil
}

// A workflow's remote tasks are part of its history: retention deletes them with it.
func init() { historyTables = append(historyTables, "remote_tasks") }

// RemoteTaskCancelEnded cancels the pending and leased tasks of workflows that ended (cancelled,
// say) and returns how many: no worker is offered them, and a worker that holds one gets CONFLICT
// on its next heartbeat or result. The open tasks' workflows are read first (few), then which of
// them ended, then their tasks are cancelled: no statement reads the table it changes.
func (s *Store) RemoteTaskCancelEnded(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	err := s.Tx(ctx, func(ctx context.Context, tx *Store) error {
		n = 0 // Tx may run this again
		var open []int64
		if err := tx.idb.NewSelect().Model((*RemoteTask)(nil)).Column("workflow_id").Distinct().
			Where("status IN (?, ?)", RemoteTaskPending, RemoteTaskLeased).Scan(ctx, &open); err != nil || len(open) == 0 {
			return err
		}
		var ended []int64
		if err := tx.idb.NewSelect().Model((*Workflow)(nil)).Column("id").
			Where("id IN (?) AND status IN (?)", bunIn(open), bunIn(terminalStatuses)).Scan(ctx, &ended); err != nil || len(ended) == 0 {
			return err
		}
		res, err := tx.idb.NewUpdate().Model((*RemoteTask)(nil)).
			Set("status = ?", RemoteTaskCancelled).Set("lease_token = NULL").Set("consumed = ?", UTC(now)).
			Where("status IN (?, ?) AND workflow_id IN (?)", RemoteTaskPending, RemoteTaskLeased, bunIn(ended)).Exec(ctx)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("error cancelling the remote tasks of ended workflows: %w", err)
	}
	return n, nil
}
