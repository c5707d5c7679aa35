// Package persistence is cairn's storage: Bun models for every entity, the Store with one
// context-first method per operation on them, one dialect seam (PostgreSQL, SQLite, MariaDB/MySQL)
// for the statements that differ per database, and the embedded migrations that create the schema.
package persistence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"
)

// Sentinel errors a Store method returns (wrapped); test them with errors.Is.
var (
	// ErrNotFound: the row asked for does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the change collides with the row's current state (a unique key, a stale version).
	ErrConflict = errors.New("conflict")
)

// Store reads and writes cairn's tables. Its zero value is not usable: get one from Open. A Store
// made by Tx runs every method inside that transaction.
type Store struct {
	db      *bun.DB
	idb     bun.IDB
	dialect dialect
	url     string
	raw     string
	// pending is what the transaction (a Store made by Tx) carries until it commits; nil outside.
	pending *txState
	// sideEffects groups the side-effect statements of concurrently running steps, and bounds how
	// many run at once so that they never take every pooled connection from the claimer and the
	// completer.
	sideEffects *sideEffectBatches
	// beat is a connection of its own for executor heartbeats (nil: none, use db), so that a
	// heartbeat never queues behind API reads holding the pool (SQLite's only connection, or every
	// pooled one on PostgreSQL): a busy node must not look dead.
	beat *bun.DB
	// writers takes turns between the SQLite write transactions of the main connection and the
	// heartbeats of the other (nil elsewhere): SQLite's busy wait would let a stream of back-to-back
	// transactions starve the heartbeat.
	writers *sync.Mutex
	// sessions are the lock sessions of the executors registered through this Store.
	sessions *executorSessions
	// alerts caches the alert rules (shared with the Store's transactions).
	alerts *alertCache
	// retried counts the transactions the database rolled back and retryTx ran again (shared with
	// the Store's transactions).
	retried *atomic.Int64
}

// Kind names the database behind a Store.
type Kind string

// The supported databases.
const (
	KindPostgres Kind = "postgres"
	KindSQLite   Kind = "sqlite"
	// KindMySQL is MariaDB 10.11+ or MySQL 8.
	KindMySQL Kind = "mysql"
)

// DB returns the Bun database (for hooks and tests; the engine goes through Store methods).
func (s *Store) DB() *bun.DB { return s.db }

// Bun returns the handle the Store's statements run on: the database, or the transaction of a
// Store made by Tx (for statements kept outside the Store, such as cairn bench's clean-up).
func (s *Store) Bun() bun.IDB { return s.idb }

// Kind returns which database this Store talks to.
func (s *Store) Kind() Kind { return s.dialect.kind() }

// URL returns the URL the Store was opened with, with any password removed.
func (s *Store) URL() string { return s.url }

// Close closes the database.
func (s *Store) Close() error {
	s.closeSessions()
	if s.beat != nil {
		_ = s.beat.Close()
	}
	return s.db.Close()
}

// beatDB is where heartbeats go: the dedicated connection when there is one.
func (s *Store) beatDB() bun.IDB {
	if s.beat != nil && !s.InTx() {
		return s.beat
	}
	return s.idb
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// InTx reports whether the Store runs inside a transaction.
func (s *Store) InTx() bool { _, ok := s.idb.(bun.Tx); return ok }

// Tx runs fn in one transaction, committing when fn returns nil. Inside fn use only tx: on SQLite the
// pool has a single connection, so a call on the outer Store would wait for the transaction forever.
//
// When the database rolls the transaction back to break a deadlock (or a lock wait or serialization
// failure), Tx runs fn again in a new transaction, a few times (see retryTx): so fn must start from
// scratch on each run, setting rather than appending to what it hands out. A Tx inside a Tx joins
// the outer transaction and is retried only as part of it.
func (s *Store) Tx(ctx context.Context, fn func(ctx context.Context, tx *Store) error) error {
	if s.InTx() {
		return fn(ctx, s)
	}
	return s.retryTx(ctx, func() error { return s.txOnce(ctx, fn) })
}

// txOnce runs fn in one transaction (s is not in one).
func (s *Store) txOnce(ctx context.Context, fn func(ctx context.Context, tx *Store) error) error {
	run := func(ctx context.Context, btx bun.Tx) error {
		tx := &Store{db: s.db, idb: btx, dialect: s.dialect, url: s.url, raw: s.raw, pending: &txState{},
			sideEffects: s.sideEffects, beat: s.beat, writers: s.writers, sessions: s.sessions, alerts: s.alerts, retried: s.retried}
		if err := fn(ctx, tx); err != nil {
			return err
		}
		return s.dialect.beforeCommit(ctx, tx)
	}
	if s.writers == nil {
		return s.db.RunInTx(ctx, &sql.TxOptions{}, run)
	}
	// Take the connection first, then the writers' turn: waiting for the connection (behind API
	// reads) must not hold up the heartbeat.
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("error taking a connection: %w", err)
	}
	defer conn.Close()
	s.writers.Lock()
	defer s.writers.Unlock()
	return conn.RunInTx(ctx, &sql.TxOptions{}, run)
}

// beatWrite runs a heartbeat's statement on its own connection, in turn with SQLite's writers.
func (s *Store) beatWrite(fn func(db bun.IDB) error) error {
	if s.writers != nil && !s.InTx() {
		s.writers.Lock()
		defer s.writers.Unlock()
	}
	return fn(s.beatDB())
}

// Now is the Store's clock: UTC, truncated to the microseconds every database keeps, so a time
// written and read back compares equal.
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// UTC normalizes a caller's time the same way Now does.
func UTC(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// UTCPtr is UTC for an optional time.
func UTCPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := UTC(*t)
	return &u
}

func notFound(what string, id any) error {
	return fmt.Errorf("%s %v: %w", what, id, ErrNotFound)
}

// noRows turns sql.ErrNoRows into ErrNotFound naming what was looked up.
func noRows(err error, what string, id any) error {
	if errors.Is(err, sql.ErrNoRows) {
		return notFound(what, id)
	}
	return fmt.Errorf("error loading %s %v: %w", what, id, err)
}

// conflictOr turns a unique-key violation into ErrConflict and leaves other errors as they are.
func (s *Store) conflictOr(err error) error {
	if err != nil && s.dialect.uniqueViolation(err) {
		return fmt.Errorf("%w: %v", ErrConflict, err)
	}
	return err
}
