package main

import (
	"context"
	"net"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// commandsOnDatabase are the command lines that open a database, without --database.
var commandsOnDatabase = [][]string{
	{"serve", "--demo", "--addr", "127.0.0.1:0"},
	{"migrate", "up"},
	{"migrate", "down"},
	{"migrate", "status"},
}

func TestBadDatabaseURLs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		url  string
		want string
	}{
		{"unknown scheme", "oracle://cairn@127.0.0.1:1521/cairn", `unsupported database URL "oracle://cairn@127.0.0.1:1521/cairn"`},
		{"mysql without a database", "mysql://cairn@127.0.0.1:3306", `unsupported database URL "mysql://cairn@127.0.0.1:3306"`},
		{"no scheme", "cairn.db", `unsupported database URL "cairn.db"`},
		// Port 1 on the loopback is closed: the connection is refused at once.
		{"unreachable", "postgres://cairn:secret@127.0.0.1:1/cairn?sslmode=disable", "error connecting to postgres://cairn:xxxxx@127.0.0.1:1/cairn"},
		{"unreachable mysql", "mysql://cairn:secret@127.0.0.1:1/cairn", "error connecting to mysql://cairn:xxxxx@127.0.0.1:1/cairn"},
	}
	for _, tc := range cases {
		for _, args := range commandsOnDatabase {
			t.Run(tc.name+"/"+args[0]+"_"+args[1], func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				r := runCairn(t, dir, nil, append(args, "--database", tc.url)...)
				require.Equal(t, 1, r.code, r.stderr)
				requireOneLineError(t, r, tc.want)
				require.NotContains(t, r.stderr, "secret", "the password must not be printed")
				entries, err := os.ReadDir(dir)
				require.NoError(t, err)
				require.Empty(t, entries, "cairn wrote files although it could not open the database")
			})
		}
	}
}

func TestDatabaseMigratedByNewerCairn(t *testing.T) {
	t.Parallel()
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			url, store := migratedByNewerCairn(t, kind)
			before := appliedMigrations(t, store)
			require.Contains(t, before, futureMigration)

			for _, args := range commandsOnDatabase {
				r := runCairn(t, "", nil, append(args, "--database", url)...)
				require.Equal(t, 1, r.code, "cairn %v: %s", args, r.stderr)
				requireOneLineError(t, r, "database schema is newer than this cairn")
				require.Contains(t, r.stderr, futureMigration)
			}
			r := runCairn(t, "", nil, "serve", "--no-migrate", "--addr", "127.0.0.1:0", "--database", url)
			requireOneLineError(t, r, "database schema is newer than this cairn")

			// Nothing was written: no migration ran or was undone, no node registered, and
			// --demo registered no definition.
			require.Equal(t, before, appliedMigrations(t, store))
			ctx := context.Background()
			for _, table := range []string{"executors", "workflow_definitions"} {
				n, err := store.DB().NewSelect().Table(table).Count(ctx)
				require.NoError(t, err)
				require.Zero(t, n, "rows in %s", table)
			}
		})
	}
}

func TestServeNoMigrateRefusesAnEmptyDatabase(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t, persistence.KindSQLite)
	r := runCairn(t, "", nil, "serve", "--no-migrate", "--addr", "127.0.0.1:0", "--database", url)
	require.Equal(t, 1, r.code)
	requireOneLineError(t, r, "database is not migrated")
	require.Contains(t, r.stderr, "cairn migrate up")
}

func TestCommandLineMistakes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"fly"}, `unknown command "fly"`},
		{[]string{"serve", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"serve", "extra"}, `unexpected argument "extra"`},
		{[]string{"serve", "--no-api", "--no-workers"}, "leave nothing to run"},
		{[]string{"serve", "--log-format", "xml"}, `invalid --log-format "xml"`},
		{[]string{"serve", "--concurrency", "0"}, "--concurrency must be at least 1"},
		{[]string{"serve", "--max-steps", "0"}, "--max-steps must be positive"},
		{[]string{"migrate"}, "want one of up, down, status"},
		{[]string{"migrate", "sideways"}, `unknown action "sideways"`},
	}
	for _, tc := range cases {
		t.Run(tc.args[0]+"_"+tc.want, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			r := runCairn(t, dir, nil, tc.args...)
			require.Equal(t, 2, r.code, r.stderr)
			requireOneLineError(t, r, tc.want)
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Empty(t, entries)
		})
	}

	r := runCairn(t, "", []string{"CAIRN_CONCURRENCY=many"}, "serve")
	require.Equal(t, 2, r.code)
	requireOneLineError(t, r, `invalid value "many" in CAIRN_CONCURRENCY`)

	r = runCairn(t, "", nil)
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "Usage: cairn <command>")
}

func TestHelp(t *testing.T) {
	t.Parallel()
	r := runCairn(t, "", nil, "help")
	require.Zero(t, r.code)
	for _, c := range commands {
		require.Contains(t, r.stdout, c.name)
	}

	r = runCairn(t, "", nil, "serve", "-h")
	require.Zero(t, r.code)
	for _, want := range []string{"--database URL  [CAIRN_DATABASE_URL]", "--addr host:port  [CAIRN_ADDR]", "[CAIRN_DEMO]", "[CAIRN_NO_WORKERS]"} {
		require.Contains(t, r.stdout, want)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	r := runCairn(t, "", nil, "version")
	require.Zero(t, r.code, r.stderr)
	require.Regexp(t, `^cairn `+testVersion+` \(go1\.\d+`, r.stdout)
	require.Empty(t, r.stderr)
}

func TestServeOnTakenAddress(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	dir := t.TempDir()
	r := runCairn(t, dir, nil, "serve", "--addr", ln.Addr().String())
	require.Equal(t, 1, r.code)
	requireOneLineError(t, r, "error listening on "+ln.Addr().String())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "the default database was created although cairn could not listen")
}
