package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/migrate"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// futureMigration is a migration no cairn of this version knows: a newer cairn applied it.
const futureMigration = "29991231235959"

// cairnTables are the tables the migrations create.
var cairnTables = []string{
	"workflow_definitions", "executors", "workflows", "task_instances", "actions", "action_variables",
	"side_effects", "activity_logs", "signals", "form_submissions", "schedules", "idempotency_keys",
	"change_events", "api_tokens",
}

// openStore opens a database the test inspects next to the binary, closed when the test ends.
func openStore(t *testing.T, url string) *persistence.Store {
	t.Helper()
	store, err := persistence.Open(context.Background(), url, persistence.OpenOptions{MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// migratedByNewerCairn returns a migrated database on which a newer cairn applied futureMigration.
func migratedByNewerCairn(t *testing.T, kind persistence.Kind) (string, *persistence.Store) {
	t.Helper()
	url := dbtest.URL(t, kind)
	store := openStore(t, url)
	ctx := context.Background()
	_, err := store.Migrate(ctx)
	require.NoError(t, err)
	_, err = store.DB().NewInsert().ModelTableExpr("cairn_migrations").
		Model(&migrate.Migration{Name: futureMigration, GroupID: 999, MigratedAt: time.Now()}).Exec(ctx)
	require.NoError(t, err)
	return url, store
}

// appliedMigrations returns the names in cairn_migrations, one entry per row.
func appliedMigrations(t *testing.T, store *persistence.Store) []string {
	t.Helper()
	var names []string
	require.NoError(t, store.DB().NewSelect().Table("cairn_migrations").Column("name").Order("name").
		Scan(context.Background(), &names))
	return names
}

// knownMigrations returns the names of the migrations this cairn embeds, for a backend.
func knownMigrations(t *testing.T, kind persistence.Kind) []string {
	t.Helper()
	store := openStore(t, dbtest.URL(t, kind))
	statuses, err := store.MigrationStatuses(context.Background())
	require.NoError(t, err)
	require.NotEmpty(t, statuses)
	names := make([]string, len(statuses))
	for i, st := range statuses {
		names[i] = st.Name
	}
	return names
}

func TestMigrateUpStatusDown(t *testing.T) {
	t.Parallel()
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			url := dbtest.URL(t, kind)
			known := knownMigrations(t, kind)
			store := openStore(t, url)
			ctx := context.Background()

			r := runCairn(t, "", nil, "migrate", "status", "--database", url)
			require.Zero(t, r.code, r.stderr)
			for _, name := range known {
				require.Contains(t, r.stdout, "pending  "+name)
			}
			require.Contains(t, r.stdout, fmt.Sprintf(", %d pending\n", len(known)))
			require.ErrorIs(t, store.CheckSchema(ctx), persistence.ErrNotMigrated)

			r = runCairn(t, "", nil, "migrate", "up", "--database", url)
			require.Zero(t, r.code, r.stderr)
			for _, name := range known {
				require.Contains(t, r.stdout, "applied "+name+"\n")
			}
			require.NoError(t, store.CheckSchema(ctx))
			require.Equal(t, known, appliedMigrations(t, store))

			// Flags may come before the action, and a second up has nothing to do.
			r = runCairn(t, "", nil, "migrate", "--database", url, "up")
			require.Zero(t, r.code, r.stderr)
			require.Contains(t, r.stdout, "is up to date")
			require.Equal(t, known, appliedMigrations(t, store))

			r = runCairn(t, "", nil, "migrate", "status", "--database", url)
			require.Zero(t, r.code, r.stderr)
			for _, name := range known {
				require.Contains(t, r.stdout, "applied  "+name)
			}
			require.Contains(t, r.stdout, ", 0 pending\n")

			r = runCairn(t, "", nil, "migrate", "down", "--database", url)
			require.Zero(t, r.code, r.stderr)
			require.Contains(t, r.stdout, "rolled back ")
			require.ErrorIs(t, store.CheckSchema(ctx), persistence.ErrNotMigrated)
		})
	}
}

func TestMigrateReadsDatabaseFromEnvironment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := runCairn(t, dir, []string{"CAIRN_DATABASE_URL=sqlite://env.db"}, "migrate", "up")
	require.Zero(t, r.code, r.stderr)
	require.Contains(t, r.stdout, "applied ")
	require.NoError(t, openStore(t, "sqlite://"+dir+"/env.db").CheckSchema(context.Background()))

	// The flag wins over its twin: the twin names a database cairn cannot open.
	r = runCairn(t, dir, []string{"CAIRN_DATABASE_URL=mysql://nowhere/db"}, "migrate", "status", "--database", "sqlite://env.db")
	require.Zero(t, r.code, r.stderr)
	require.Contains(t, r.stdout, ", 0 pending\n")
}

// Three nodes migrating one empty PostgreSQL schema at the same moment take turns: all succeed,
// each migration is applied exactly once, and the schema is whole.
func TestMigrateConcurrentlyOnPostgres(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t, persistence.KindPostgres)
	known := knownMigrations(t, persistence.KindPostgres)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const nodes = 3
	cmds := make([]*exec.Cmd, nodes)
	outs := make([]*strings.Builder, nodes)
	for i := range cmds {
		cmds[i] = exec.CommandContext(ctx, cairnBin, "migrate", "up", "--database", url)
		cmds[i].Env = cairnEnv()
		outs[i] = &strings.Builder{}
		cmds[i].Stdout, cmds[i].Stderr = outs[i], outs[i]
	}
	for _, cmd := range cmds {
		require.NoError(t, cmd.Start())
	}
	applied := map[string]int{}
	for i, cmd := range cmds {
		require.NoError(t, cmd.Wait(), "node %d: %s", i, outs[i])
		requireNoRace(t, outs[i].String())
		for _, line := range strings.Split(outs[i].String(), "\n") {
			if name, ok := strings.CutPrefix(line, "applied "); ok {
				applied[name]++
			}
		}
	}
	for _, name := range known {
		require.Equal(t, 1, applied[name], "migration %s applied by %d nodes", name, applied[name])
	}
	require.Len(t, applied, len(known))

	store := openStore(t, url)
	require.Equal(t, known, appliedMigrations(t, store), "one cairn_migrations row per migration")
	require.NoError(t, store.CheckSchema(ctx))
	var tables []string
	require.NoError(t, store.DB().NewRaw(
		"SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()").Scan(ctx, &tables))
	require.Subset(t, tables, cairnTables)
}
