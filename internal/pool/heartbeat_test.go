package pool_test

import (
	"context"
	"database/sql"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// API reads holding every connection of a node's pool (SQLite's only one, PostgreSQL's whole pool)
// for many times the executor expiry must not get the node declared dead: its heartbeat has a
// connection of its own. Another node checking for dead executors meanwhile finds none, and the
// step running through it all finishes once, never marked LOST.
func TestHeartbeatLandsWhileAPIReadsHoldThePool(t *testing.T) {
	t.Parallel()
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			u := dbtest.URL(t, kind)
			open := func() *persistence.Store {
				s, err := persistence.Open(ctx, u, persistence.OpenOptions{MaxConns: 3})
				require.NoError(t, err)
				t.Cleanup(func() { _ = s.Close() })
				return s
			}
			storeA := open()
			_, err := storeA.Migrate(ctx)
			require.NoError(t, err)
			storeB := open()

			var runs atomic.Int32
			started := make(chan struct{}, 4)
			def := workflow.Definition{Type: "t.long", States: []workflow.State{
				{Name: "run", Kind: workflow.Start, Next: []string{"done"}, Handler: func(ctx workflow.StepContext) (workflow.Next, error) {
					runs.Add(1)
					started <- struct{}{}
					select {
					case <-ctx.Done():
						return workflow.Next{}, ctx.Err()
					case <-time.After(2 * time.Second):
					}
					return workflow.MoveTo("done"), nil
				}},
				{Name: "done", Kind: workflow.End}}}
			a := setup(t, storeA, def)
			pool := a.startWorker(t, fastOptions())
			b := setup(t, storeB, def) // the other node: only its search for dead executors runs

			w := a.start(t, "t.long", `{}`)
			<-started
			executor := pool.ExecutorID()

			// The API's reads take every connection of node A's pool and keep them for 5 expiries.
			var held []*sql.Conn
			for range storeA.DB().Stats().MaxOpenConnections {
				c, err := storeA.DB().DB.Conn(ctx)
				require.NoError(t, err)
				held = append(held, c)
			}
			recovered := 0
			for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
				n, err := b.engine.Recover(ctx, recoverParams{ExecutorID: 0})
				require.NoError(t, err)
				recovered += n
				time.Sleep(100 * time.Millisecond)
			}
			for _, c := range held {
				require.NoError(t, c.Close())
			}

			a.waitStatus(t, w.ID, persistence.StatusFinished)
			require.Zero(t, recovered, "another node declared the busy node dead and took its work")
			require.Equal(t, executor, pool.ExecutorID(), "the busy node was declared dead and registered again")
			require.EqualValues(t, 1, runs.Load(), "the step ran once")
			for _, ti := range a.tasks(t, w.ID) {
				require.NotEqual(t, persistence.TaskLost, ti.Status)
			}
			execs, err := storeB.ExecutorList(ctx)
			require.NoError(t, err)
			for _, e := range execs {
				if e.ID == executor {
					require.Nil(t, e.Stopped, "the busy node's executor was marked stopped")
				}
			}
		})
	}
}
