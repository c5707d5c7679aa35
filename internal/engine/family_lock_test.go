package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// A child's completion that wakes its parent locks the parent before the child, as cancelling the
// parent does (parent, then its children): while an operation holds the parent, the completion
// waits without holding the child, so the operation can go on to the child instead of
// deadlocking. PostgreSQL only: SQLite has one writer.
func TestChildCompletionLocksParentFirst(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, persistence.KindPostgres)
	ctx := context.Background()
	engine := newEngine(t, store)
	now := persistence.Now()
	parent := &persistence.Workflow{Type: "demo.fanout", DefinitionVersion: 1, Status: persistence.StatusWaiting, State: "await", ExecutorGroup: "default"}
	require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{parent}))
	child := &persistence.Workflow{Type: "bench.noop", DefinitionVersion: 1, Status: persistence.StatusCreated, State: "run", ExecutorGroup: "default",
		NextActivation: &now, ParentID: &parent.ID, RootID: &parent.ID}
	require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{child}))
	exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Minute})
	require.NoError(t, err)
	claimed, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: 1,
		Now: persistence.Now(), StepDeadline: persistence.Now().Add(time.Minute), Types: []string{"bench.noop"}})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	o := engine.Execute(ctx, executeParams{Workflow: claimed[0], ExecutorID: exec.ID, Host: "h"})
	require.Equal(t, persistence.StatusFinished, o.Status())

	// An operation on the family holds the parent...
	tx, err := store.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	_, err = tx.ExecContext(ctx, "SELECT id FROM workflows WHERE id = ? FOR UPDATE", parent.ID)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		written, err := engine.Complete(ctx, []*outcome{o})
		if err == nil && len(written) != 1 {
			err = context.Canceled
		}
		done <- err
	}()
	time.Sleep(500 * time.Millisecond) // the completion is now waiting for the parent
	// ...and goes on to the child, which the waiting completion must not hold.
	_, err = tx.ExecContext(ctx, "SET LOCAL lock_timeout = '2s'")
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, "SELECT id FROM workflows WHERE id = ? FOR UPDATE", child.ID)
	require.NoError(t, err, "the child's completion held the child while waiting for its parent")
	require.NoError(t, tx.Commit())
	require.NoError(t, <-done)
	w, err := store.WorkflowGet(ctx, parent.ID)
	require.NoError(t, err)
	require.Equal(t, persistence.StatusInProgress, w.Status, "the parent was woken")
}
