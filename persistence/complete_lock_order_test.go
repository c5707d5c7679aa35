package persistence_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// A completion locks its workflows in the order of their IDs, whatever the order it was given
// them in, so it never deadlocks with a transaction that locks some of the same workflows in that
// order (as a completion that ends children locks their parents). Given q before p, it locked q
// and then waited for p while the other transaction held p and waited for q: PostgreSQL broke the
// cycle only after deadlock_timeout (a second) and the Store ran its victim again, which a
// batch of fan-outs whose parents' steps completed beside their children met. (MariaDB's
// completion locks its rows in ID order with a SELECT ... FOR UPDATE before it writes them;
// SQLite has one writer.)
func TestCompletionLocksItsWorkflowsInIDOrder(t *testing.T) {
	t.Parallel()
	dbtest.ForKinds(t, []persistence.Kind{persistence.KindPostgres}, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		now := persistence.Now()
		exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Minute})
		require.NoError(t, err)
		// A batch as a busy pool writes them, given in the reverse of their IDs' order: p first
		// by ID, q last.
		batch := make([]*persistence.Workflow, 300)
		for i := range batch {
			batch[i] = newWorkflow("t", persistence.StatusExecuting, &now)
			batch[i].ExecutorID, batch[i].Version = &exec.ID, 1
		}
		require.NoError(t, store.WorkflowInsertMany(ctx, batch))
		p, q := batch[0], batch[len(batch)-1]
		require.Less(t, p.ID, q.ID)

		// The other transaction holds p.
		other, err := store.DB().BeginTx(ctx, nil)
		require.NoError(t, err)
		defer func() { _ = other.Rollback() }()
		var xid string
		require.NoError(t, other.QueryRowContext(ctx, "SELECT txid_current()::text").Scan(&xid))
		_, err = other.ExecContext(ctx, "SELECT id FROM workflows WHERE id = ? FOR UPDATE", p.ID)
		require.NoError(t, err)

		// The completion of the batch waits for it.
		done := make(chan error, 1)
		go func() {
			done <- store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
				end := func(w *persistence.Workflow) persistence.WorkflowCompletion {
					return persistence.WorkflowCompletion{ID: w.ID, ExecutorID: exec.ID, ClaimedVersion: 1,
						Status: persistence.StatusFinished, State: "end", Variables: []byte(`{}`), Finished: ptr(now)}
				}
				cs := make([]persistence.WorkflowCompletion, 0, len(batch))
				for i := len(batch) - 1; i >= 0; i-- {
					cs = append(cs, end(batch[i]))
				}
				_, err := tx.WorkflowCompleteMany(ctx, cs)
				return err
			})
		}()
		deadline := time.Now().Add(30 * time.Second)
		for {
			var waiting int
			require.NoError(t, store.DB().QueryRowContext(ctx,
				"SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'transactionid' AND transactionid::text = ?", xid).Scan(&waiting))
			if waiting > 0 {
				break
			}
			require.True(t, time.Now().Before(deadline), "the completion never waited for the other transaction")
			time.Sleep(10 * time.Millisecond)
		}

		// The other transaction takes q next, in the order of the IDs.
		_, err = other.ExecContext(ctx, "SELECT id FROM workflows WHERE id = ? FOR UPDATE", q.ID)
		require.NoError(t, err, "the other transaction was not a deadlock's victim")
		require.NoError(t, other.Commit())
		require.NoError(t, <-done)
		require.Zero(t, store.TxRetries(), "the completion was not a deadlock's victim")
		for _, w := range batch {
			got, err := store.WorkflowGet(ctx, w.ID)
			require.NoError(t, err)
			require.Equal(t, persistence.StatusFinished, got.Status)
		}
	})
}
