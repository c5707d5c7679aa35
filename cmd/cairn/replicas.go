package main

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/cairnflow/cairn/internal/replicas"
	"github.com/cairnflow/cairn/persistence"
)

// urlList is a repeatable flag of database URLs.
type urlList []string

func (l *urlList) String() string { return strings.Join(*l, " ") }

func (l *urlList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// replicaFlags are --read-database and --read-max-lag.
type replicaFlags struct {
	urls   urlList
	maxLag time.Duration
}

func (f *replicaFlags) register(fs *flagSet) {
	fs.Var(&f.urls, "read-database", "`URL` of a PostgreSQL read replica (a standby of --database) that serves read-only GraphQL queries (lists, counts, stats, history); repeat for several. Mutations, subscriptions and the workers stay on the primary")
	fs.DurationVar(&f.maxLag, "read-max-lag", 5*time.Second, "a read replica further behind the primary than this is skipped (reads go to the primary) until it catches up")
}

// check refuses replicas of a database that is not PostgreSQL, and a lag bound that is not
// positive, before anything is opened.
func (f *replicaFlags) check(database string) error {
	if len(f.urls) == 0 {
		return nil
	}
	if !isPostgresURL(database) {
		return usagef("--read-database: read replicas need a PostgreSQL --database (SQLite and MariaDB/MySQL serve every read themselves)")
	}
	if f.maxLag <= 0 {
		return usagef("--read-max-lag must be positive, not %s", f.maxLag)
	}
	return nil
}

// open checks every replica and starts watching them; nil without --read-database.
func (f *replicaFlags) open(ctx context.Context, primary *persistence.Store, maxConns int, log *slog.Logger) (*replicas.Router, error) {
	if len(f.urls) == 0 {
		return nil, nil
	}
	r, err := replicas.Open(ctx, replicas.Config{Primary: primary, URLs: f.urls, MaxLag: f.maxLag, MaxConns: maxConns, Logger: log})
	if err != nil {
		return nil, err
	}
	log.Info("read replicas in use", "count", len(f.urls), "max_lag", f.maxLag)
	return r, nil
}
