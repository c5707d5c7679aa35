package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// Cancelling a parent locks it, then its children. Another transaction holding the children and
// then asking for the parent closes a deadlock, which the database breaks by rolling one of the two
// back (InnoDB's 1213, PostgreSQL's 40P01): the one rolled back runs again, so the cancel succeeds
// and so does the other transaction, whichever was picked. The interleaving is forced: the other
// transaction asks for the parent only once the cancel is seen holding it. SQLite has one writer.
func TestCancelSurvivesADeadlockWithItsChildren(t *testing.T) {
	t.Parallel()
	dbtest.ForKinds(t, []persistence.Kind{persistence.KindPostgres, persistence.KindMySQL}, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		later := persistence.Now().Add(time.Hour)
		parent := &persistence.Workflow{Type: "demo.fanout", DefinitionVersion: 1, Status: persistence.StatusWaiting, State: "await", ExecutorGroup: "default"}
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{parent}))
		children := make([]*persistence.Workflow, 5)
		for i := range children {
			children[i] = &persistence.Workflow{Type: "demo.order", DefinitionVersion: 1, Status: persistence.StatusInProgress, State: "charge",
				ExecutorGroup: "default", NextActivation: &later, ParentID: &parent.ID, RootID: &parent.ID}
		}
		require.NoError(t, store.WorkflowInsertMany(ctx, children))
		held, err := lockedElsewhere(ctx, store, parent.ID)
		require.NoError(t, err)
		require.False(t, held, "nothing holds the parent yet")

		childrenHeld := make(chan struct{})
		var runs atomic.Int32
		other := make(chan error, 1)
		go func() {
			other <- store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
				first := runs.Add(1) == 1
				text := "touched by another transaction"
				for _, c := range children {
					w, err := tx.WorkflowGetForUpdate(ctx, c.ID)
					if err != nil {
						return err
					}
					w.StateText = &text
					if err := tx.WorkflowSave(ctx, w); err != nil {
						return err
					}
				}
				if first {
					close(childrenHeld)
					// Wait for the cancel to hold the parent: it then waits for the children.
					for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
						held, err := lockedElsewhere(ctx, tx, parent.ID)
						if err != nil {
							return err
						} else if held {
							break
						} else if time.Now().After(deadline) {
							return fmt.Errorf("the cancel never locked the parent")
						}
					}
				}
				_, err := tx.WorkflowGetForUpdate(ctx, parent.ID)
				return err
			})
		}()
		select {
		case <-childrenHeld:
		case err := <-other:
			t.Fatalf("the other transaction ended before it held the children: %v", err)
		}
		_, cancelErr := engine.Cancel(ctx, workflow.ChangeParams{ID: parent.ID, Reason: "stop everything"})
		require.NoError(t, cancelErr, "the cancel was rolled back to break the deadlock and not run again")
		require.NoError(t, <-other, "the other transaction was rolled back to break the deadlock and not run again")
		t.Logf("the other transaction ran %d times", runs.Load())

		for _, w := range append([]*persistence.Workflow{parent}, children...) {
			got, err := store.WorkflowGet(ctx, w.ID)
			require.NoError(t, err)
			require.Equal(t, persistence.StatusCancelled, got.Status, "workflow %d", w.ID)
		}
	})
}

// lockedElsewhere reports whether another transaction holds a workflow's row lock: a lock that
// does not wait (NOWAIT) is refused. It asks from a transaction of its own, rolled back at once.
func lockedElsewhere(ctx context.Context, store *persistence.Store, id int64) (bool, error) {
	tx, err := store.DB().BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback() }()
	_, err = tx.ExecContext(ctx, "SELECT id FROM workflows WHERE id = ? FOR UPDATE NOWAIT", id)
	var pgErr *pgconn.PgError
	var myErr *mysql.MySQLError
	switch {
	case err == nil:
		return false, nil
	case errors.As(err, &pgErr) && pgErr.Code == "55P03", // lock_not_available
		errors.As(err, &myErr) && (myErr.Number == 1205 || myErr.Number == 3572): // MariaDB's, MySQL's refusal
		return true, nil
	}
	return false, err
}
