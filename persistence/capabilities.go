package persistence

// Capabilities says what the database behind a Store can do that the others cannot. Code that
// behaves differently per database asks these, never which database it talks to.
type Capabilities struct {
	// SkipLocked: rows lock until the transaction ends (FOR UPDATE), and a claim skips the ones
	// others hold (SKIP LOCKED): PostgreSQL, MariaDB/MySQL. Without it a write transaction holds
	// the database's only write lock, so there are no row locks to take (SQLite).
	SkipLocked bool
	// SingleWriter: one write transaction at a time (SQLite); writers in parallel only queue.
	SingleWriter bool
	// Listen: wake-up hints travel between nodes (PostgreSQL's LISTEN/NOTIFY); without it hints
	// stay in the process and polling covers the rest.
	Listen bool
	// Returning: an UPDATE returns the rows it changed (UPDATE ... RETURNING); without it a
	// fenced update locks its rows first and updates them by ID (MariaDB/MySQL).
	Returning bool
	// Estimates: the planner's column statistics are worth asking about a condition no index
	// serves (PostgreSQL); elsewhere such counts are counted.
	Estimates bool
}

// Capabilities returns what the Store's database can do that others cannot.
func (s *Store) Capabilities() Capabilities { return s.dialect.capabilities() }

// rowLock is the locking clause of a SELECT that locks the rows it returns until the transaction
// ends ("" without row locks).
func (s *Store) rowLock(skipLocked bool) string {
	switch {
	case !s.dialect.capabilities().SkipLocked:
		return ""
	case skipLocked:
		return "UPDATE SKIP LOCKED"
	default:
		return "UPDATE"
	}
}
