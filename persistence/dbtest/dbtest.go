// Package dbtest gives each test its own migrated database on every backend cairn supports: a
// SQLite file in the test's temporary folder, a fresh schema in a PostgreSQL found through
// TEST_DATABASE_URL, and a fresh database in a MariaDB or MySQL found through TEST_MYSQL_URL; either
// server is started with testcontainers-go when its variable is unset and a Docker engine answers.
//
// Without a server the part of a test that needs it is skipped with one line saying why, except
// when CI=true, where a missing server fails the test.
package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/cairnflow/cairn/persistence"
)

// Backends are the backends a conformance test runs on.
var Backends = []persistence.Kind{persistence.KindSQLite, persistence.KindPostgres, persistence.KindMySQL}

// ForEach runs fn as a parallel subtest per backend, named after it, with a fresh migrated Store.
func ForEach(t *testing.T, fn func(t *testing.T, store *persistence.Store)) {
	t.Helper()
	ForKinds(t, Backends, fn)
}

// ForKinds is ForEach on some backends only (a test of what only they do).
func ForKinds(t *testing.T, kinds []persistence.Kind, fn func(t *testing.T, store *persistence.Store)) {
	t.Helper()
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			fn(t, Open(t, kind))
		})
	}
}

// Open returns a fresh, migrated Store of a kind, closed and dropped when the test ends.
func Open(t testing.TB, kind persistence.Kind) *persistence.Store {
	t.Helper()
	u := URL(t, kind)
	ctx := context.Background()
	store, err := persistence.Open(ctx, u, persistence.OpenOptions{MaxConns: 10})
	if err != nil {
		t.Fatalf("opening test database: %v", err)
	}
	t.Cleanup(func() { _ = store.Close() })
	if _, err := store.Migrate(ctx); err != nil {
		t.Fatalf("migrating test database: %v", err)
	}
	return store
}

// URL returns the URL of a fresh, empty database of a kind (not migrated), removed when the test
// ends: a file for SQLite, a new schema for PostgreSQL, a new database for MariaDB/MySQL.
func URL(t testing.TB, kind persistence.Kind) string {
	t.Helper()
	switch kind {
	case persistence.KindSQLite:
		return "sqlite://" + t.TempDir() + "/cairn.db"
	case persistence.KindPostgres:
		base := PostgresURL(t)
		schema := "t_" + randomHex(8)
		ctx := context.Background()
		admin, err := persistence.Open(ctx, base, persistence.OpenOptions{MaxConns: 2})
		if err != nil {
			t.Fatalf("connecting to test PostgreSQL: %v", err)
		}
		defer admin.Close()
		if _, err := admin.DB().ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
			t.Fatalf("creating test schema: %v", err)
		}
		t.Cleanup(func() {
			admin, err := persistence.Open(context.Background(), base, persistence.OpenOptions{MaxConns: 1})
			if err != nil {
				return
			}
			defer admin.Close()
			_, _ = admin.DB().ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		})
		return withSearchPath(base, schema)
	case persistence.KindMySQL:
		return freshMySQLDatabase(t, MySQLURL(t))
	}
	t.Fatalf("unknown backend %q", kind)
	return ""
}

func withSearchPath(base, schema string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// server is a database server the tests share: the URL in an environment variable, else a
// container started once; without either, tests skip with one line (and fail under CI=true).
type server struct {
	name  string // for messages: PostgreSQL, MariaDB/MySQL
	env   string // the environment variable naming its URL
	start func() (url, why string)

	once sync.Once
	url  string
	why  string
}

// URL returns the server's URL, or skips (fails under CI=true) without one.
func (s *server) URL(t testing.TB) string {
	t.Helper()
	s.once.Do(func() {
		if s.url = os.Getenv(s.env); s.url == "" {
			s.url, s.why = s.start()
		}
	})
	if s.url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required under CI=true: %s", s.name, s.why)
		}
		t.Skipf("no %s: set %s or run a Docker engine (%s)", s.name, s.env, s.why)
	}
	return s.url
}

var postgresServer = &server{name: "PostgreSQL", env: "TEST_DATABASE_URL", start: startContainer}

// PostgresURL returns the URL of the test PostgreSQL, or skips (fails under CI=true) without one.
func PostgresURL(t testing.TB) string {
	t.Helper()
	return postgresServer.URL(t)
}

func startContainer() (string, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := dockerAnswers(ctx); err != nil {
		return "", "TEST_DATABASE_URL is unset and no Docker engine answers: " + firstLine(err.Error())
	}
	c, err := tcpostgres.Run(ctx, "postgres:16-alpine",
		tcpostgres.WithDatabase("cairn_test"), tcpostgres.WithUsername("cairn"), tcpostgres.WithPassword("cairn"),
		testcontainers.WithWaitStrategy(wait.ForLog("database system is ready to accept connections").WithOccurrence(2)))
	if err != nil {
		return "", "starting a PostgreSQL container failed: " + firstLine(err.Error())
	}
	u, err := c.ConnectionString(ctx, "sslmode=disable")
	if err != nil {
		return "", "reading the PostgreSQL container's address failed: " + firstLine(err.Error())
	}
	return u, ""
}

func dockerAnswers(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return err
	}
	defer p.Close()
	return p.Health(ctx)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
