package persistence

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// WALPosition is a position in PostgreSQL's write-ahead log (a pg_lsn as a number).
type WALPosition uint64

// String writes the position as PostgreSQL does (16/B374D848).
func (p WALPosition) String() string {
	return fmt.Sprintf("%X/%X", uint64(p)>>32, uint64(p)&0xFFFFFFFF)
}

// ParseWALPosition reads a position written as PostgreSQL does.
func ParseWALPosition(s string) (WALPosition, error) {
	hi, lo, ok := strings.Cut(strings.TrimSpace(s), "/")
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if !ok || err1 != nil || err2 != nil {
		return 0, fmt.Errorf("%q is not a WAL position (such as 16/B374D848)", s)
	}
	return WALPosition(h<<32 | l), nil
}

// ReplicaState is what a PostgreSQL server says of its replication.
type ReplicaState struct {
	// InRecovery: the server is a standby (it replays another's WAL).
	InRecovery bool
	// System identifies the cluster: a standby has its primary's.
	System string
	// Position is how far the WAL is replayed (on a standby) or written (on a primary).
	Position WALPosition
	// LastReplay is when the last replayed transaction committed on the primary (nil: none yet).
	LastReplay *time.Time
	// Now is the server's clock.
	Now time.Time
}

// ReplicaState reads the server's replication state (PostgreSQL only).
func (s *Store) ReplicaState(ctx context.Context) (ReplicaState, error) {
	var st ReplicaState
	if s.Kind() != KindPostgres {
		return st, fmt.Errorf("replication state: %s is not PostgreSQL", s.Kind())
	}
	var pos string
	err := s.idb.QueryRowContext(ctx, `SELECT pg_is_in_recovery(),
		COALESCE(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END, '0/0')::text,
		pg_last_xact_replay_timestamp(), now()`).Scan(&st.InRecovery, &pos, &st.LastReplay, &st.Now)
	if err != nil {
		return st, fmt.Errorf("error reading the replication state: %w", err)
	}
	// A role without the right to read the control file leaves System empty (not compared).
	_ = s.idb.QueryRowContext(ctx, "SELECT system_identifier::text FROM pg_control_system()").Scan(&st.System)
	if st.Position, err = ParseWALPosition(pos); err != nil {
		return st, err
	}
	return st, nil
}

// CurrentWALPosition returns how far the primary has written its WAL (PostgreSQL only).
func (s *Store) CurrentWALPosition(ctx context.Context) (WALPosition, error) {
	var pos string
	if err := s.idb.QueryRowContext(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&pos); err != nil {
		return 0, fmt.Errorf("error reading the WAL position: %w", err)
	}
	return ParseWALPosition(pos)
}

// RedactURL returns a database URL without its password, for logs and errors.
func RedactURL(rawURL string) string { return redact(rawURL) }
