package persistence_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// A PostgreSQL connection keeps no prepared statement for a statement text it runs once. Bun
// writes values into the text, so each claim (its time) and each read by ID is a new text: pgx's
// default prepared and cached every one, up to 512 per connection, which held about 100 MB more
// in the server's backends after 20,000 starts over the API, and cost a round trip each.
func TestStatementsRunOnceAreNotPreparedOnPostgres(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t, persistence.KindPostgres)
	ctx := context.Background()
	migrator, err := persistence.Open(ctx, url, persistence.OpenOptions{MaxConns: 2}) // a migration needs two
	require.NoError(t, err)
	_, err = migrator.Migrate(ctx)
	require.NoError(t, err)
	require.NoError(t, migrator.Close())
	store, err := persistence.Open(ctx, url, persistence.OpenOptions{MaxConns: 1}) // one connection: the one asked below
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })

	exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Minute})
	require.NoError(t, err)
	now := persistence.Now()
	var wfs []*persistence.Workflow
	for range 60 {
		wfs = append(wfs, newWorkflow("a", persistence.StatusCreated, &now))
	}
	require.NoError(t, store.WorkflowInsertMany(ctx, wfs))
	claimed := 0
	for i := range 60 {
		at := now.Add(time.Duration(i+1) * time.Millisecond) // a text of its own
		got, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: 1,
			Now: at, StepDeadline: at.Add(time.Minute), Types: []string{"a"}})
		require.NoError(t, err)
		require.Len(t, got, 1)
		claimed++
		w, err := store.WorkflowGet(ctx, got[0].ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusExecuting, w.Status) // read back as it was written
		require.Equal(t, at.UnixMicro(), w.Modified.UnixMicro())
	}
	require.Equal(t, 60, claimed)

	var prepared int
	require.NoError(t, store.DB().QueryRowContext(ctx, "SELECT count(*) FROM pg_prepared_statements").Scan(&prepared))
	require.Less(t, prepared, 20, "prepared statements kept by the connection after 60 claims and 60 reads of distinct texts")
}
