package persistence_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// endSession ends the database session holding an executor's lock, from another session, as the
// death of its process would: PostgreSQL's pg_terminate_backend, MariaDB's KILL.
func endSession(t *testing.T, store *persistence.Store, id int64) {
	t.Helper()
	ctx := context.Background()
	switch store.Kind() {
	case persistence.KindPostgres:
		var ended bool
		require.NoError(t, store.DB().NewRaw(`SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted
			AND objsubid = 2 AND classid = (hashtext('cairn.executor:' || current_schema()) & 2147483647)::oid AND objid = ?::oid`, id).
			Scan(ctx, &ended))
		require.True(t, ended)
	case persistence.KindMySQL:
		var conn int64
		require.NoError(t, store.DB().NewRaw("SELECT IS_USED_LOCK(CONCAT('cairn.', LEFT(MD5(DATABASE()), 16), '.', ?))", id).Scan(ctx, &conn))
		_, err := store.DB().ExecContext(ctx, "KILL ?", conn)
		require.NoError(t, err)
	}
}

// expireUntil runs ExecutorExpireDead until it declares some executor dead (the database ends a
// terminated session asynchronously), for up to 10s.
func expireUntil(t *testing.T, store *persistence.Store) []int64 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ids, err := store.ExecutorExpireDead(context.Background(), persistence.Now())
		require.NoError(t, err)
		if len(ids) > 0 || time.Now().After(deadline) {
			return ids
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An executor registered with a session lock is declared dead as soon as its database session ends,
// long before its expiry; one whose session lives is not, and one that lost its session but is alive
// locks again on its next heartbeat. A store judges others by their locks only once its own lock is
// older than the grace. On SQLite, which has no session locks, only the expiry counts.
func TestExecutorSessionLocks(t *testing.T) {
	t.Parallel()
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			url := dbtest.URL(t, kind)
			open := func() *persistence.Store {
				store, err := persistence.Open(ctx, url, persistence.OpenOptions{MaxConns: 4})
				require.NoError(t, err)
				t.Cleanup(func() { _ = store.Close() })
				return store
			}
			nodeA, nodeB, late := open(), open(), open()
			_, err := nodeA.Migrate(ctx)
			require.NoError(t, err)
			register := func(store *persistence.Store, grace time.Duration) *persistence.Executor {
				e, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default",
					Expiry: time.Hour, SessionLock: true, LockGrace: grace})
				require.NoError(t, err)
				return e
			}
			a, b := register(nodeA, time.Millisecond), register(nodeB, time.Millisecond)
			plain, err := nodeB.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 2, Group: "default", Expiry: time.Hour})
			require.NoError(t, err)
			time.Sleep(5 * time.Millisecond)

			if !nodeA.SessionLocks() {
				require.Equal(t, persistence.KindSQLite, kind)
				require.False(t, a.SessionLock, "no session lock where the database has none")
				expired, err := nodeB.ExecutorExpireDead(ctx, persistence.Now())
				require.NoError(t, err)
				require.Empty(t, expired, "only an expiry declares an executor dead here")
				require.NoError(t, nodeA.ExecutorHeartbeat(ctx, a.ID, time.Hour))
				return
			}
			require.True(t, a.SessionLock)
			expired, err := nodeB.ExecutorExpireDead(ctx, persistence.Now())
			require.NoError(t, err)
			require.Empty(t, expired, "executors whose sessions live are alive")

			// A store whose own lock is younger than its grace does not judge others by theirs.
			register(late, time.Hour)
			endSession(t, nodeA, a.ID)
			time.Sleep(200 * time.Millisecond)
			expired, err = late.ExecutorExpireDead(ctx, persistence.Now())
			require.NoError(t, err)
			require.Empty(t, expired, "a store that just (re)connected waits for the others to lock again")

			require.Equal(t, []int64{a.ID}, expireUntil(t, nodeB), "the executor whose session ended is dead, its expiry an hour away")
			require.ErrorIs(t, nodeA.ExecutorHeartbeat(ctx, a.ID, time.Hour), persistence.ErrNotFound, "it learns so on its next heartbeat")
			require.NoError(t, nodeB.ExecutorHeartbeat(ctx, b.ID, time.Hour))

			// A live executor whose session was cut locks again on its next heartbeat, and is then
			// alive to the others.
			endSession(t, nodeB, b.ID)
			require.Eventually(t, func() bool { return nodeB.ExecutorHeartbeat(ctx, b.ID, time.Hour) == nil }, 10*time.Second, 20*time.Millisecond)
			c := register(nodeA, time.Millisecond) // nodeA judges again once its new lock is past the grace
			time.Sleep(5 * time.Millisecond)
			expired, err = nodeA.ExecutorExpireDead(ctx, persistence.Now())
			require.NoError(t, err)
			require.Empty(t, expired, "the executor that locked again is alive")

			// Stopping releases the lock; a stopped executor is not declared dead again.
			require.NoError(t, nodeA.ExecutorStop(ctx, c.ID))
			expired, err = nodeB.ExecutorExpireDead(ctx, persistence.Now())
			require.NoError(t, err)
			require.Empty(t, expired)
			all, err := nodeB.ExecutorGetMany(ctx, []int64{plain.ID, b.ID})
			require.NoError(t, err)
			require.True(t, all[0].Alive(persistence.Now()), "an executor without a session lock lives until its expiry")
			require.True(t, all[1].Alive(persistence.Now()))
		})
	}
}
