package persistence_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// Two transactions lock two workflows in opposite orders, each holding its first lock until the
// other has taken its own: the database must roll one of them back to break the deadlock (InnoDB's
// 1213, PostgreSQL's 40P01). Tx runs that one again, so both commit. SQLite is left out: its
// transactions take the one write lock when they begin and cannot deadlock.
func TestTxRunsADeadlockVictimAgain(t *testing.T) {
	t.Parallel()
	dbtest.ForKinds(t, []persistence.Kind{persistence.KindPostgres, persistence.KindMySQL}, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		a, b := newWorkflow("t", persistence.StatusInProgress, nil), newWorkflow("t", persistence.StatusInProgress, nil)
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{a, b}))

		var runs atomic.Int32
		var holding sync.WaitGroup // each first run holds its first lock
		holding.Add(2)
		lockBoth := func(first, second int64, text string) func(ctx context.Context, tx *persistence.Store) error {
			var mine atomic.Int32
			return func(ctx context.Context, tx *persistence.Store) error {
				runs.Add(1)
				w, err := tx.WorkflowGetForUpdate(ctx, first)
				if err != nil {
					return err
				}
				if mine.Add(1) == 1 {
					holding.Done()
					holding.Wait() // the other holds its first lock too: the next lock closes the cycle
				}
				other, err := tx.WorkflowGetForUpdate(ctx, second)
				if err != nil {
					return err
				}
				for _, x := range []*persistence.Workflow{w, other} {
					x.StateText = &text
					if err := tx.WorkflowSave(ctx, x); err != nil {
						return err
					}
				}
				return nil
			}
		}
		errs := make(chan error, 2)
		go func() { errs <- store.Tx(ctx, lockBoth(a.ID, b.ID, "a then b")) }()
		go func() { errs <- store.Tx(ctx, lockBoth(b.ID, a.ID, "b then a")) }()
		require.NoError(t, <-errs)
		require.NoError(t, <-errs)
		// At least one run was rolled back; the victim may collide again with the survivor as
		// it runs again, before the survivor has its second lock.
		require.Greater(t, runs.Load(), int32(2), "a transaction was rolled back and ran again")

		got, err := store.WorkflowGet(ctx, a.ID)
		require.NoError(t, err)
		other, err := store.WorkflowGet(ctx, b.ID)
		require.NoError(t, err)
		require.Equal(t, *got.StateText, *other.StateText, "the transaction that ran again wrote both rows last")
		require.Equal(t, 2, got.Version, "each transaction saved each row once")
	})
}

// Tx runs a transaction again only for the errors of a transaction the database rolled back to
// break a deadlock, and a bounded number of times: a transaction that keeps losing returns its
// error, and any other error (or a rolled-back one after the caller gave up) returns at once.
func TestTxRetriesOnlyRolledBackTransactionsAndAFewTimes(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		var victim error // what the database says to the transaction it rolls back
		switch store.Kind() {
		case persistence.KindPostgres:
			victim = &pgconn.PgError{Code: "40P01", Message: "deadlock detected"}
		case persistence.KindMySQL:
			victim = &mysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock"}
		}
		runs := func(ctx context.Context, err error, then func()) int {
			n := 0
			got := store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
				n++
				_, lerr := tx.WorkflowGet(ctx, 1) // a statement in the transaction, as real ones run
				require.ErrorIs(t, lerr, persistence.ErrNotFound)
				then()
				return err
			})
			require.ErrorIs(t, got, err)
			return n
		}
		other := errors.New("not a deadlock")
		require.Equal(t, 1, runs(ctx, other, func() {}), "another error is not retried")
		if victim == nil {
			return // SQLite's transactions never deadlock: nothing is retried
		}
		require.Equal(t, 5, runs(ctx, victim, func() {}), "a transaction that keeps losing gives up after 5 runs")
		gaveUp, cancel := context.WithCancel(ctx)
		require.Equal(t, 1, runs(gaveUp, victim, cancel), "a caller that gave up is not kept waiting")
	})
}
