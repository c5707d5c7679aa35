package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/migrate"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

func TestServeAnswersProbesAndStopsCleanly(t *testing.T) {
	t.Parallel()
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			url := dbtest.URL(t, kind)
			n := startNode(t, nil, "--database", url, "--demo", "--addr", "127.0.0.1:0", "--log-format", "json")

			code, body := n.get(t, "/healthz")
			require.Equal(t, http.StatusOK, code, body)
			code, body = n.get(t, "/readyz")
			require.Equal(t, http.StatusOK, code, body)

			// serve migrated the empty database and --demo registered the demo definitions.
			store := openStore(t, url)
			ctx := context.Background()
			require.NoError(t, store.CheckSchema(ctx))
			for _, typ := range []string{"demo.order", "demo.approval", "demo.fanout", "bench.noop"} {
				_, err := store.DefinitionGet(ctx, persistence.DefinitionGetParams{Type: typ})
				require.NoError(t, err, "definition %s", typ)
			}

			require.Zero(t, n.stop(t), n.output())
			require.NotNil(t, n.findLog("cairn stopped"), n.output())
		})
	}
}

func TestServeIsConfiguredByEnvironment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flagDB := filepath.Join(dir, "flag.db")
	n := startNode(t, []string{
		"CAIRN_ADDR=127.0.0.1:0",
		"CAIRN_LOG_FORMAT=json",
		"CAIRN_DEMO=true",
		"CAIRN_NO_WORKERS=1",
		// The flag wins: this URL would fail to open.
		"CAIRN_DATABASE_URL=mysql://nowhere/cairn",
	}, "--database", "sqlite://"+flagDB)

	started := n.findLog("cairn started")
	require.Equal(t, true, started["demo"], n.output())
	require.Equal(t, false, started["workers"], n.output())
	require.Equal(t, "sqlite://"+flagDB, started["database"])
	require.Nil(t, n.findLog("worker started"), "CAIRN_NO_WORKERS=1 must start no worker pool")
	_, err := os.Stat(flagDB)
	require.NoError(t, err)
	code, body := n.get(t, "/readyz")
	require.Equal(t, http.StatusOK, code, body)
	require.Zero(t, n.stop(t), n.output())
}

// /readyz turns 503, with the reason, when another node migrates the database past this one.
func TestReadyzReportsSchemaAheadOfNode(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t, persistence.KindSQLite)
	n := startNode(t, nil, "--database", url, "--addr", "127.0.0.1:0", "--log-format", "json", "--no-workers")
	code, body := n.get(t, "/readyz")
	require.Equal(t, http.StatusOK, code, body)

	store := openStore(t, url)
	ctx := context.Background()
	future := &migrate.Migration{Name: futureMigration, GroupID: 999, MigratedAt: time.Now()}
	_, err := store.DB().NewInsert().ModelTableExpr("cairn_migrations").Model(future).Exec(ctx)
	require.NoError(t, err)

	code, body = n.get(t, "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "database schema is newer than this cairn")
	code, _ = n.get(t, "/healthz")
	require.Equal(t, http.StatusOK, code, "the process is still up")

	_, err = store.DB().NewDelete().TableExpr("cairn_migrations").Where("name = ?", futureMigration).Exec(ctx)
	require.NoError(t, err)
	code, body = n.get(t, "/readyz")
	require.Equal(t, http.StatusOK, code, body)
	require.Zero(t, n.stop(t), n.output())
}

func TestServeWorkersOnlyOpensNoPort(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t, persistence.KindSQLite)
	n := startNode(t, nil, "--database", url, "--log-format", "json", "--no-api", "--group", "a,b")
	require.Nil(t, n.findLog("http server listening"))
	require.Empty(t, n.addr)
	// Both pools register before the node is stopped.
	store := openStore(t, url)
	require.Eventually(t, func() bool {
		n, err := store.DB().NewSelect().Table("executors").Count(context.Background())
		return err == nil && n == 2
	}, 30*time.Second, 20*time.Millisecond, n.output())
	require.Zero(t, n.stop(t), n.output())

	// One executor per group, each marked stopped by the drain.
	var groups []string
	require.NoError(t, store.DB().NewSelect().Table("executors").Column("executor_group").
		Where("stopped IS NOT NULL").Order("executor_group").Scan(context.Background(), &groups))
	require.Equal(t, []string{"a", "b"}, groups)
}
