package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// partitionOf returns the partition holding the actions of a workflow.
func partitionsOf(t *testing.T, store *persistence.Store, workflowID string) []string {
	t.Helper()
	var out []string
	require.NoError(t, store.DB().NewRaw(`SELECT DISTINCT tableoid::regclass::text FROM actions WHERE workflow_id = ?`, workflowID).
		Scan(context.Background(), &out))
	return out
}

func TestHistoryPartitionFlagIsCheckedAtStart(t *testing.T) {
	t.Parallel()
	r := runCairn(t, "", nil, "serve", "--history-partition", "month")
	requireOneLineError(t, r, "day or week")
	r = runCairn(t, "", nil, "serve", "--history-partition", "week", "--retention", "48h")
	requireOneLineError(t, r, "shorter than a history partition")
	for _, kind := range []persistence.Kind{persistence.KindSQLite, persistence.KindMySQL} {
		t.Run(string(kind), func(t *testing.T) {
			url := dbtest.URL(t, kind)
			r := runCairn(t, "", nil, "serve", "--database", url, "--history-partition", "day", "--addr", "127.0.0.1:0")
			requireOneLineError(t, r, "history partitioning needs PostgreSQL")
			r = runCairn(t, "", nil, "migrate", "partition-history", "--database", url)
			requireOneLineError(t, r, "history partitioning needs PostgreSQL")
		})
	}
}

// A new PostgreSQL database is partitioned at start; a step's history lands in the partition of
// its day, and a node started without the flag keeps the width the database has.
func TestServePartitionsTheHistoryOfANewDatabase(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t, persistence.KindPostgres)
	n := startNode(t, nil, "--database", url, "--demo", "--addr", "127.0.0.1:0", "--log-format", "json",
		"--history-partition", "day", "--retention", "720h")
	require.NotNil(t, n.findLog("partitioned the history tables"), n.output())
	var started struct {
		StartWorkflow struct{ Workflow struct{ ID string } }
	}
	n.graphql(t, `mutation($input: StartWorkflowInput!) { startWorkflow(input: $input) { workflow { id } } }`,
		map[string]any{"input": map[string]any{"type": "demo.order", "input": map[string]any{"amount": 1}}}, &started)
	var got struct{ Workflow struct{ Status string } }
	deadline := time.Now().Add(90 * time.Second)
	for got.Workflow.Status != "FINISHED" {
		require.True(t, time.Now().Before(deadline), "not finished in time: %s", got.Workflow.Status)
		time.Sleep(50 * time.Millisecond)
		n.graphql(t, `query($id: ID!) { workflow(id: $id) { status } }`, map[string]any{"id": started.StartWorkflow.Workflow.ID}, &got)
	}
	require.Zero(t, n.stop(t), n.output())

	store := openStore(t, url)
	var id string
	require.NoError(t, store.DB().QueryRowContext(context.Background(), "SELECT max(workflow_id)::text FROM actions").Scan(&id))
	require.Equal(t, []string{"actions_p" + time.Now().UTC().Format("20060102")}, partitionsOf(t, store, id))

	again := startNode(t, nil, "--database", url, "--addr", "127.0.0.1:0", "--log-format", "json")
	line := again.findLog("the history tables are partitioned")
	require.NotNil(t, line, again.output())
	require.Equal(t, "day", line["width"])
	require.Zero(t, again.stop(t), again.output())
	r := runCairn(t, "", nil, "serve", "--database", url, "--history-partition", "week", "--addr", "127.0.0.1:0")
	requireOneLineError(t, r, "partitioned by day already")
}

// A database holding history is partitioned by cairn migrate partition-history (not at start),
// keeping its rows.
func TestMigratePartitionsAHistoryInPlace(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t, persistence.KindPostgres)
	r := runCairn(t, "", nil, "migrate", "up", "--database", url)
	require.Zero(t, r.code, r.stderr)
	store := openStore(t, url)
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO workflows (type, definition_version, status, state, executor_group, created, modified, finished)
			VALUES ('t', 1, 'FINISHED', 'done', 'default', now() - interval '20 days', now(), now() - interval '20 days')`,
		`INSERT INTO actions (workflow_id, type, state, at) SELECT id, 'STATE_EXECUTION', 'done', now() - interval '20 days' FROM workflows`,
		`INSERT INTO action_variables (workflow_id, action_id, key, value) SELECT workflow_id, id, 'k', '1' FROM actions`,
	} {
		_, err := store.DB().ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	r = runCairn(t, "", nil, "serve", "--database", url, "--history-partition", "week", "--addr", "127.0.0.1:0")
	requireOneLineError(t, r, "cairn migrate partition-history")

	r = runCairn(t, "", nil, "migrate", "partition-history", "--width", "week", "--database", url)
	require.Zero(t, r.code, r.stderr)
	require.Contains(t, r.stdout, "partitioned the history")
	require.Contains(t, r.stdout, "2 rows copied")
	r = runCairn(t, "", nil, "migrate", "partition-history", "--width", "week", "--database", url)
	require.Zero(t, r.code, r.stderr)
	require.Contains(t, r.stdout, "partitioned by week already")

	// A node with a retention shorter than the partitions is refused; with a longer one, it drops
	// the partition that only held expired history.
	r = runCairn(t, "", nil, "serve", "--database", url, "--retention", "72h", "--addr", "127.0.0.1:0")
	requireOneLineError(t, r, "shorter than a history partition")
	n := startNode(t, nil, "--database", url, "--addr", "127.0.0.1:0", "--log-format", "json", "--retention", "168h")
	n.waitLog(t, "expired history")
	require.Zero(t, n.stop(t), n.output())
	var left int
	require.NoError(t, store.DB().QueryRowContext(ctx, "SELECT count(*) FROM actions").Scan(&left))
	require.Zero(t, left)
}
