package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// A step cannot store what the API refuses either: a move to a time past the year 9999 fails the
// step for good (instead of stopping every claim on SQLite), and a variable or output with a NUL
// character or an overlong key is refused to the handler (instead of failing the completion on
// PostgreSQL). Other workflows go on.
func TestStepsCannotStoreWhatTheAPIRefuses(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		tooLate := time.Date(9999, 12, 31, 23, 59, 59, 0, time.FixedZone("", -(23*3600+59*60)))
		_, err := engine.Register(ctx, workflow.Definition{Type: "t.far", States: []workflow.State{
			{Name: "plan", Kind: workflow.Start, Next: []string{"later"}, Handler: func(workflow.StepContext) (workflow.Next, error) {
				return workflow.MoveToAt("later", tooLate), nil
			}},
			{Name: "later", Kind: workflow.End},
			{Name: "broken", Kind: workflow.ErrorKind},
		}})
		require.NoError(t, err)
		var mu sync.Mutex
		var errs []error
		_, err = engine.Register(ctx, workflow.Definition{Type: "t.vars", States: []workflow.State{
			{Name: "set", Kind: workflow.Start, Next: []string{"done"}, Handler: func(sc workflow.StepContext) (workflow.Next, error) {
				mu.Lock()
				defer mu.Unlock()
				errs = append(errs, sc.SetVar("a\x00", 1), sc.SetVar(strings.Repeat("k", workflow.MaxKeyLength+1), 1),
					sc.SetVar("k", "a\x00b"), sc.SetVar("m", map[string]any{"\x00": 1}), sc.SetOutput([]string{"\x00"}))
				if err := sc.SetVar("ok", 1); err != nil {
					return workflow.Next{}, err
				}
				return workflow.Finish(), nil
			}},
			{Name: "done", Kind: workflow.End},
		}})
		require.NoError(t, err)
		far, err := engine.Start(ctx, workflow.StartParams{Type: "t.far"})
		require.NoError(t, err)
		vars, err := engine.Start(ctx, workflow.StartParams{Type: "t.vars"})
		require.NoError(t, err)
		order, err := engine.Start(ctx, workflow.StartParams{Type: "demo.order"})
		require.NoError(t, err)

		runDue(t, store, engine)

		w, err := store.WorkflowGet(ctx, far.Workflow.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusFailed, w.Status)
		require.Equal(t, "broken", w.State)
		require.NotNil(t, w.LastError)
		require.Contains(t, *w.LastError, "years 0001 to 9999")

		w, err = store.WorkflowGet(ctx, vars.Workflow.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusFinished, w.Status)
		require.JSONEq(t, `{"ok": 1}`, string(w.Variables))
		mu.Lock()
		require.Len(t, errs, 5)
		for _, err := range errs {
			require.Error(t, err)
		}
		mu.Unlock()

		w, err = store.WorkflowGet(ctx, order.Workflow.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusFinished, w.Status, "other workflows go on")
	})
}
