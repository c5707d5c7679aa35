package persistence

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// ExecutorRegisterParams is the input of ExecutorRegister.
type ExecutorRegisterParams struct {
	Host   string
	PID    int
	Group  string
	Expiry time.Duration
	// SessionLock asks for the executor to hold a database session lock while it lives (where
	// SessionLocks says the database has them), so that it is declared dead as soon as its
	// process dies. It must then heartbeat with ExecutorHeartbeat and end with ExecutorStop.
	SessionLock bool
	// LockGrace is how long after the store's own lock session (re)started it waits before
	// judging other executors by their locks: long enough for live nodes to lock again after the
	// database restarts (two heartbeats).
	LockGrace time.Duration
}

// ExecutorRegister records a starting worker pool and returns it with its ID (over the heartbeat
// connection, like ExecutorHeartbeat: a node registering again must not wait behind API reads).
func (s *Store) ExecutorRegister(ctx context.Context, p ExecutorRegisterParams) (*Executor, error) {
	now := Now()
	e := &Executor{Host: p.Host, PID: p.PID, ExecutorGroup: p.Group, Started: now, Active: now, Expires: now.Add(p.Expiry)}
	if locker, ok := s.locker(); ok && p.SessionLock {
		if err := s.registerWithSessionLock(ctx, locker, e, p.LockGrace); err != nil {
			return nil, fmt.Errorf("error registering executor: %w", err)
		}
		return e, nil
	}
	if err := s.beatWrite(func(db bun.IDB) error {
		_, err := db.NewInsert().Model(e).Returning("id").Exec(ctx)
		return err
	}); err != nil {
		return nil, fmt.Errorf("error registering executor: %w", err)
	}
	return e, nil
}

// ExecutorHeartbeat extends an executor's expiry, over a connection of its own that API reads
// never hold. It fails with ErrNotFound when the executor is stopped or was declared dead (its work
// recovered by another node): it must then stop working.
func (s *Store) ExecutorHeartbeat(ctx context.Context, id int64, expiry time.Duration) error {
	var n int64
	err := s.beatWrite(func(db bun.IDB) error {
		now := Now()
		res, err := db.NewUpdate().Model((*Executor)(nil)).Set("active = ?", now).Set("expires = ?", now.Add(expiry)).
			Where("id = ? AND stopped IS NULL", id).Exec(ctx)
		if err == nil {
			n, _ = res.RowsAffected()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("error heartbeating executor %d: %w", id, err)
	}
	if n != 1 {
		s.closeSession(ctx, id)
		return notFound("live executor", id)
	}
	return s.keepSession(ctx, id)
}

// ExecutorStop marks an executor stopped. Workflows it still holds are released by the caller first
// (the worker's drain), or recovered as a dead executor's.
func (s *Store) ExecutorStop(ctx context.Context, id int64) error {
	now := Now()
	_, err := s.idb.NewUpdate().Model((*Executor)(nil)).Set("stopped = ?", now).Where("id = ? AND stopped IS NULL", id).Exec(ctx)
	s.closeSession(ctx, id)
	if err != nil {
		return fmt.Errorf("error stopping executor %d: %w", id, err)
	}
	return nil
}

// ExecutorList returns every executor, newest first.
func (s *Store) ExecutorList(ctx context.Context) ([]*Executor, error) {
	var out []*Executor
	if err := s.idb.NewSelect().Model(&out).OrderExpr("id DESC").Scan(ctx); err != nil {
		return nil, fmt.Errorf("error listing executors: %w", err)
	}
	return out, nil
}

// ExecutorGetMany returns the executors with the given IDs, in ID order.
func (s *Store) ExecutorGetMany(ctx context.Context, ids []int64) ([]*Executor, error) {
	return getByIDs[Executor](ctx, s, ids, "executors")
}

// ExecutorExpireDead marks stopped every executor whose heartbeat expired before now, and every one
// registered with a session lock that no session holds any more (its process died), and returns
// their IDs, locking them so that only one node recovers each.
func (s *Store) ExecutorExpireDead(ctx context.Context, now time.Time) ([]int64, error) {
	now = UTC(now)
	where := "stopped IS NULL AND expires < ?"
	if locker, ok := s.locker(); ok && s.judgesByLocks(now) {
		where = "stopped IS NULL AND (expires < ? OR (session_lock AND " + locker.executorLockFree() + "))"
	}
	ids, err := s.updateReturningIDs(ctx, updateStatement{Table: "executors", Set: "stopped = ?", SetArgs: []any{now},
		Where: where, WhereArgs: []any{now}})
	if err != nil {
		return nil, fmt.Errorf("error expiring dead executors: %w", err)
	}
	return ids, nil
}

// WorkflowOrphaned returns up to limit workflows held by an executor that has stopped or was
// declared dead (EXECUTING ones, and ones paused, cancelled or changed while their step ran),
// locking them (SKIP LOCKED) so that two recovering nodes never take the same one. The stopped
// executors are read first and their workflows looked up by executor: a join would let the
// planner walk every held workflow, the live executors' too, on every recovery pass.
func (s *Store) WorkflowOrphaned(ctx context.Context, limit int64) ([]*Workflow, error) {
	var stopped []int64
	if err := s.idb.NewSelect().Model((*Executor)(nil)).Column("id").Where("stopped IS NOT NULL").Scan(ctx, &stopped); err != nil {
		return nil, fmt.Errorf("error listing stopped executors: %w", err)
	}
	if len(stopped) == 0 {
		return nil, nil
	}
	var wfs []*Workflow
	q := s.idb.NewSelect().Model(&wfs).Where("w.executor_id IN (?)", bun.List(stopped)).Limit(limit)
	q = s.forUpdate(q, true)
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("error loading orphaned workflows: %w", err)
	}
	return wfs, nil
}

// WorkflowClaimedBefore returns the IDs of workflows an executor holds, last changed before a time.
func (s *Store) WorkflowClaimedBefore(ctx context.Context, executorID int64, claimedBefore time.Time) ([]int64, error) {
	var ids []int64
	if err := s.idb.NewSelect().Model((*Workflow)(nil)).Column("id").
		Where("executor_id = ? AND modified < ?", executorID, UTC(claimedBefore)).
		OrderExpr("id").Scan(ctx, &ids); err != nil {
		return nil, fmt.Errorf("error listing workflows held by executor %d: %w", executorID, err)
	}
	return ids, nil
}

// WorkflowHeldForUpdate returns the given workflows that an executor still holds, locked (SKIP
// LOCKED) where there are row locks.
func (s *Store) WorkflowHeldForUpdate(ctx context.Context, executorID int64, ids []int64) ([]*Workflow, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var wfs []*Workflow
	q := s.forUpdate(s.idb.NewSelect().Model(&wfs).Where("id IN (?) AND executor_id = ?", bunIn(ids), executorID).OrderExpr("id"), true)
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("error loading held workflows: %w", err)
	}
	return wfs, nil
}

// AsyncCommit lets the current transaction commit without waiting for its log to reach disk
// (PostgreSQL; a no-op elsewhere or outside a transaction). Only for writes whose loss in a
// database crash is recovered by re-running a step: claims and completions.
func (s *Store) AsyncCommit(ctx context.Context) error {
	if !s.InTx() {
		return nil
	}
	if err := s.dialect.asyncCommit(ctx, s); err != nil {
		return fmt.Errorf("error setting asynchronous commit: %w", err)
	}
	return nil
}

// ExecutorPageParams selects a page of executors, newest first.
type ExecutorPageParams struct {
	// Limit is the most executors to return (0: all).
	Limit int
	// BeforeID keeps the executors registered before this one (0: from the newest).
	BeforeID int64
	// Alive, when set, keeps the live executors (true: not stopped, heartbeat not expired at
	// Now) or the others (false).
	Alive *bool
	Now   time.Time
}

// ExecutorPage returns a page of executors, newest first.
func (s *Store) ExecutorPage(ctx context.Context, p ExecutorPageParams) ([]*Executor, error) {
	var out []*Executor
	q := s.idb.NewSelect().Model(&out).OrderExpr("e.id DESC")
	if p.BeforeID > 0 {
		q = q.Where("e.id < ?", p.BeforeID)
	}
	if p.Alive != nil {
		if *p.Alive {
			q = q.Where("e.stopped IS NULL AND e.expires > ?", UTC(p.Now))
		} else {
			q = q.Where("(e.stopped IS NOT NULL OR e.expires <= ?)", UTC(p.Now))
		}
	}
	if p.Limit > 0 {
		q = q.Limit(int64(p.Limit))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("error listing executors: %w", err)
	}
	return out, nil
}

// WorkflowLockAvailable locks those of the given workflows that no other transaction holds (SKIP
// LOCKED) and returns their IDs; without row locks (SQLite, one writer) it returns them all.
func (s *Store) WorkflowLockAvailable(ctx context.Context, ids []int64) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var locked []int64
	q := s.forUpdate(s.idb.NewSelect().Model((*Workflow)(nil)).Column("id").Where("id IN (?)", bunIn(ids)).OrderExpr("id"), true)
	if err := q.Scan(ctx, &locked); err != nil {
		return nil, fmt.Errorf("error locking %d workflows: %w", len(ids), err)
	}
	return locked, nil
}
