package persistence

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/uptrace/bun"
)

// A session lock makes a killed node's death visible at once. Each executor registered with
// SessionLock holds a lock of the database (PostgreSQL's session advisory lock, MariaDB's GET_LOCK)
// on a connection of its own for as long as it lives. The database frees the lock the moment that
// session ends, which is the moment a killed process's socket closes, so the other nodes can
// declare the executor dead within one recovery pass instead of after its expiry. A hung process
// keeps its session and its lock: the expiry still covers it.
//
// After the database restarts or fails over, every session ends together. So that no node then
// declares the others dead before they had a chance to lock again, a store judges others by their
// locks only while one of its own sessions has held its lock for longer than the grace (two
// heartbeats): every live node has reconnected and locked again by then.

// sessionLocker is what a dialect with session locks implements.
type sessionLocker interface {
	// hasSessionLocks reports whether the Store's sessions can hold locks (not behind a
	// transaction-mode pooler).
	hasSessionLocks() bool
	// lockExecutor takes an executor's session lock on db's session, without waiting; false when
	// another session holds it.
	lockExecutor(ctx context.Context, db bun.IDB, id int64) (bool, error)
	// unlockExecutor releases the lock.
	unlockExecutor(ctx context.Context, db bun.IDB, id int64) error
	// executorLockFree is a condition on the executors table (unaliased) that holds where the row's
	// executor's lock is held by no session.
	executorLockFree() string
}

// executorSession is one executor's lock session: a one-connection pool and its pinned connection.
type executorSession struct {
	db   *bun.DB
	conn bun.Conn
	// since is when the session took its lock.
	since time.Time
}

func (es *executorSession) close(ctx context.Context, locker sessionLocker, id int64) {
	_ = locker.unlockExecutor(ctx, es.conn, id)
	_ = es.conn.Close()
	_ = es.db.Close()
}

// executorSessions are the lock sessions of the executors registered through one Store.
type executorSessions struct {
	mu    sync.Mutex
	held  map[int64]*executorSession
	grace time.Duration
}

func newExecutorSessions() *executorSessions {
	return &executorSessions{held: map[int64]*executorSession{}}
}

// locker returns the dialect's session locks, or false when the database has none.
func (s *Store) locker() (sessionLocker, bool) {
	l, ok := s.dialect.(sessionLocker)
	return l, ok && l.hasSessionLocks()
}

// openSession opens a connection of its own for an executor's lock.
func (s *Store) openSession(ctx context.Context) (*executorSession, error) {
	db, err := s.dialect.openBeat(ctx, "", s.raw, OpenOptions{MaxConns: 1})
	if err != nil {
		return nil, err
	}
	if db == nil {
		return nil, errors.New("the database has no session of its own for a lock")
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	return &executorSession{db: db, conn: conn}, nil
}

// registerWithSessionLock inserts an executor and takes its session lock in one transaction on the
// lock's own session: the row becomes visible with its lock already held.
func (s *Store) registerWithSessionLock(ctx context.Context, locker sessionLocker, e *Executor, grace time.Duration) error {
	es, err := s.openSession(ctx)
	if err != nil {
		return err
	}
	e.SessionLock = true
	err = es.conn.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(e).Returning("id").Exec(ctx); err != nil {
			return err
		}
		ok, err := locker.lockExecutor(ctx, tx, e.ID)
		if err == nil && !ok {
			err = fmt.Errorf("the session lock of new executor %d is held by another session", e.ID)
		}
		return err
	})
	if err != nil {
		_ = es.conn.Close()
		_ = es.db.Close()
		return err
	}
	es.since = time.Now()
	s.sessions.mu.Lock()
	s.sessions.held[e.ID] = es
	s.sessions.grace = max(s.sessions.grace, grace)
	s.sessions.mu.Unlock()
	return nil
}

// keepSession checks an executor's lock session and, when the session has ended (the database
// restarted, failed over or cut the connection), opens a new one and locks again. The executor
// counts others' locks only after the new lock has been held for the grace.
func (s *Store) keepSession(ctx context.Context, id int64) error {
	locker, ok := s.locker()
	if !ok {
		return nil
	}
	s.sessions.mu.Lock()
	es := s.sessions.held[id]
	s.sessions.mu.Unlock()
	if es == nil {
		return nil
	}
	if err := es.conn.PingContext(ctx); err == nil {
		return nil
	}
	fresh, err := s.openSession(ctx)
	if err != nil {
		return fmt.Errorf("error reopening the lock session of executor %d: %w", id, err)
	}
	ok, err = locker.lockExecutor(ctx, fresh.conn, id)
	if err != nil || !ok {
		// The old session may still hold the lock until the database notices it is gone: try
		// again on the next heartbeat.
		_ = fresh.conn.Close()
		_ = fresh.db.Close()
		if err == nil {
			err = errors.New("the old session still holds it")
		}
		return fmt.Errorf("error locking executor %d again: %w", id, err)
	}
	fresh.since = time.Now()
	s.sessions.mu.Lock()
	s.sessions.held[id] = fresh
	s.sessions.mu.Unlock()
	_ = es.conn.Close()
	_ = es.db.Close()
	return nil
}

// closeSession releases an executor's lock and closes its session (the executor stopped or was
// declared dead).
func (s *Store) closeSession(ctx context.Context, id int64) {
	locker, ok := s.locker()
	if !ok {
		return
	}
	s.sessions.mu.Lock()
	es := s.sessions.held[id]
	delete(s.sessions.held, id)
	s.sessions.mu.Unlock()
	if es != nil {
		es.close(ctx, locker, id)
	}
}

// closeSessions closes every lock session (the Store closes).
func (s *Store) closeSessions() {
	locker, ok := s.locker()
	if !ok {
		return
	}
	s.sessions.mu.Lock()
	held := s.sessions.held
	s.sessions.held = map[int64]*executorSession{}
	s.sessions.mu.Unlock()
	for id, es := range held {
		es.close(context.Background(), locker, id)
	}
}

// judgesByLocks reports whether this store may declare other executors dead by their free locks
// at now: one of its own sessions has held its lock for longer than the grace.
func (s *Store) judgesByLocks(now time.Time) bool {
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	for _, es := range s.sessions.held {
		if now.Sub(es.since) > s.sessions.grace {
			return true
		}
	}
	return false
}

// SessionLocks reports whether executors registered with SessionLock hold a database session lock
// on this database (PostgreSQL, MariaDB/MySQL), and so are declared dead when their process dies.
func (s *Store) SessionLocks() bool {
	_, ok := s.locker()
	return ok
}
