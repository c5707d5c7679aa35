package persistence_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// On MariaDB a completion locks only the workflows it completes: while another transaction holds
// an unrelated row (here the parent, as a cancel does before it goes on to the children), the
// completion of a child neither waits for that row nor closes a deadlock with it. The tables are
// small, as in a new installation, where the planner would rather scan them whole. The test
// watches the server's own view of the completion's transaction: lock waits in this database.
func TestMariaDBCompletionLocksOnlyItsOwnRows(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, persistence.KindMySQL)
	ctx := context.Background()
	now := persistence.Now()
	exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Minute})
	require.NoError(t, err)
	parent := newWorkflow("parent", persistence.StatusWaiting, nil)
	require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{parent}))
	var children []*persistence.Workflow
	for range 3 {
		c := newWorkflow("child", persistence.StatusCreated, &now)
		c.ParentID, c.RootID = &parent.ID, &parent.ID
		children = append(children, c)
	}
	require.NoError(t, store.WorkflowInsertMany(ctx, children))
	claimed, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: 1, Now: now,
		StepDeadline: now.Add(time.Minute), Types: []string{"child"}})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	var database string
	require.NoError(t, store.DB().QueryRowContext(ctx, "SELECT DATABASE()").Scan(&database))

	holder, err := store.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = holder.Rollback() }()
	_, err = holder.ExecContext(ctx, "SELECT id FROM workflows WHERE id = ? FOR UPDATE", parent.ID)
	require.NoError(t, err)

	type result struct {
		ids []int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		ids, err := store.WorkflowCompleteMany(ctx, []persistence.WorkflowCompletion{{ID: claimed[0].ID, ExecutorID: exec.ID,
			ClaimedVersion: claimed[0].Version, Status: persistence.StatusInProgress, State: "next", Variables: []byte(`{}`), NextActivation: &now}})
		done <- result{ids, err}
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		select {
		case r := <-done:
			require.NoError(t, r.err)
			require.Equal(t, []int64{claimed[0].ID}, r.ids)
			return
		default:
		}
		var waiting int
		require.NoError(t, store.DB().QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.INNODB_TRX AS t
			JOIN information_schema.PROCESSLIST AS p ON p.ID = t.trx_mysql_thread_id WHERE t.trx_state = 'LOCK WAIT' AND p.DB = ?`,
			database).Scan(&waiting))
		require.Zero(t, waiting, "the completion of a child waits for a lock on another row")
		require.False(t, time.Now().After(deadline), "the completion neither ended nor waited")
	}
}
