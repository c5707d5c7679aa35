package persistence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/driver/sqliteshim"
)

// ErrUnsupportedURL is returned by Open for a database URL whose scheme cairn does not know.
var ErrUnsupportedURL = errors.New("unsupported database URL")

// OpenOptions tunes Open. The zero value suits a cairn node.
type OpenOptions struct {
	// MaxConns caps the pool of PostgreSQL and MariaDB/MySQL (default 20). SQLite always uses one connection: it has one
	// writer, and one connection makes Go's pool the queue instead of SQLite's busy loop.
	MaxConns int
	// IdleInTransactionTimeout makes PostgreSQL end a session that sits inside a transaction doing
	// nothing for this long (default 5s): a node frozen mid-transaction (SIGSTOP, a VM pause) would
	// otherwise keep its workflows locked, and out of other nodes' recovery, until it thaws.
	IdleInTransactionTimeout time.Duration
	// QueryTracer, on PostgreSQL, sees every statement the Store sends with its arguments
	// (tracing; the plan tests EXPLAIN what a workload ran). Nil: none.
	QueryTracer pgx.QueryTracer
	// Pooler says a postgres:// URL reaches PostgreSQL through a pooler in transaction mode
	// (PgBouncer's pool_mode = transaction), where a server connection serves other clients
	// between transactions. The Store then prepares no named statements, sends no startup
	// parameter a pooler refuses (set idle_in_transaction_session_timeout on the server), does not
	// LISTEN (nodes find work by polling), holds no executor session locks (a dead node is found
	// by its expiry) and takes the migration lock for a transaction. Ignored elsewhere.
	Pooler bool
}

// Open connects to the database a URL names: sqlite:///path/file.db, sqlite://relative.db,
// sqlite://:memory:, postgres://... (postgresql:// too), or mysql://user:pass@host:3306/db for
// MariaDB 10.11+ and MySQL 8. It checks the database answers; it does not migrate (see Migrate).
func Open(ctx context.Context, rawURL string, opts OpenOptions) (*Store, error) {
	scheme, _, ok := strings.Cut(rawURL, "://")
	if !ok {
		return nil, fmt.Errorf("%w %q: want sqlite:///path/file.db, sqlite://:memory:, postgres://host/db or mysql://host/db", ErrUnsupportedURL, redact(rawURL))
	}
	var (
		db  *bun.DB
		d   dialect
		err error
	)
	switch strings.ToLower(scheme) {
	case "sqlite", "sqlite3":
		db, err = openSQLite(rawURL[len(scheme)+3:])
		d = sqliteDialect{}
	case "postgres", "postgresql":
		db, err = openPostgres(rawURL, opts)
		d = postgresDialect{pooled: opts.Pooler}
	case "mysql", "mariadb":
		db, err = openMySQL(ctx, rawURL, opts)
		d = mysqlDialect{}
	default:
		return nil, fmt.Errorf("%w %q: scheme %q is not sqlite, postgres or mysql", ErrUnsupportedURL, redact(rawURL), scheme)
	}
	if err != nil {
		return nil, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("error connecting to %s: %w", redact(rawURL), err)
	}
	store := &Store{db: db, idb: db, dialect: d, url: redact(rawURL), raw: rawURL, sessions: newExecutorSessions(), alerts: &alertCache{},
		retried: &atomic.Int64{}}
	beatOpts := opts
	beatOpts.MaxConns = 1
	if store.beat, err = d.openBeat(ctx, rawURL[len(scheme)+3:], rawURL, beatOpts); err != nil {
		_ = db.Close()
		return nil, err
	}
	if store.beat != nil && d.capabilities().SingleWriter {
		store.writers = &sync.Mutex{}
	}
	// Side effects may use at most a quarter of the pool, so claims and completions always find a
	// connection.
	store.sideEffects = newSideEffectBatches(store, max(1, db.DB.Stats().MaxOpenConnections/4))
	return store, nil
}

func openSQLite(path string) (*bun.DB, error) {
	memory := path == ":memory:" || path == ""
	var dsn string
	if memory {
		dsn = "file::memory:"
	} else {
		if dir := filepath.Dir(path); dir != "." {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("error creating the folder of %s: %w", path, err)
			}
		}
		dsn = "file:" + path
	}
	dsn += "?_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	if !memory {
		dsn += "&_pragma=journal_mode(WAL)"
	}
	sqldb, err := sql.Open(sqliteshim.ShimName, dsn)
	if err != nil {
		return nil, fmt.Errorf("error opening sqlite %s: %w", path, err)
	}
	sqldb.SetMaxOpenConns(1)
	sqldb.SetMaxIdleConns(1)
	sqldb.SetConnMaxLifetime(0)
	sqldb.SetConnMaxIdleTime(0)
	return bun.NewDB(sqldb, newSQLiteTimeGuard(), bun.WithDiscardUnknownColumns()), nil
}

func openPostgres(rawURL string, opts OpenOptions) (*bun.DB, error) {
	cfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("error parsing %s: %w", redact(rawURL), err)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 5 * time.Second
	}
	cfg.RuntimeParams["timezone"] = "UTC"
	idle := opts.IdleInTransactionTimeout
	if idle <= 0 {
		idle = 5 * time.Second
	}
	if opts.Pooler {
		// Unnamed statements only, each parsed, bound and run in one round trip; and no startup
		// parameters beyond those a pooler passes on.
		cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	} else if _, set := cfg.RuntimeParams["idle_in_transaction_session_timeout"]; !set {
		cfg.RuntimeParams["idle_in_transaction_session_timeout"] = fmt.Sprint(idle.Milliseconds())
	}
	if opts.QueryTracer != nil {
		cfg.Tracer = opts.QueryTracer
	}
	sqldb := sql.OpenDB(unpreparedLiterals{stdlib.GetConnector(*cfg)})
	max := opts.MaxConns
	if max <= 0 {
		max = 20
	}
	sqldb.SetMaxOpenConns(max)
	sqldb.SetMaxIdleConns(max)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	return bun.NewDB(sqldb, pgdialect.New(), bun.WithDiscardUnknownColumns()), nil
}

// redact removes a password from a URL for logs and errors.
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.User == nil {
		return rawURL
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
