package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// Concurrent signals to one workflow serialize on its row: none deadlocks (PostgreSQL's 40P01 came
// from two signals each holding the key-share lock their insert takes and then asking for the row).
func TestSignalConcurrentOneWorkflow(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		for _, waiting := range []bool{false, true} {
			res, err := engine.Start(ctx, workflow.StartParams{Type: "demo.approval"})
			require.NoError(t, err)
			id := res.Workflow.ID
			if waiting {
				// Put it in its WAIT state, so every signal also tries to wake it.
				w, err := store.WorkflowGet(ctx, id)
				require.NoError(t, err)
				w.Status, w.State, w.NextActivation = persistence.StatusWaiting, "await", nil
				w.WaitSignal = ptr("approve")
				require.NoError(t, store.WorkflowSave(ctx, w))
			}
			const n = 50
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := engine.Signal(ctx, workflow.SignalParams{ID: id, Name: "approve", Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
					errs <- err
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			sigs, err := store.SignalList(ctx, []int64{id})
			require.NoError(t, err)
			require.Len(t, sigs, n, "waiting=%v", waiting)
		}
	})
}
