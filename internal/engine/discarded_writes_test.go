package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// A failed attempt's variable writes are discarded, whether the step returned an error or asked
// for a move its state does not allow: the workflow keeps what the last successful step left,
// and no action records the writes.
func TestAFailedAttemptLeavesNoVariablesBehind(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		_, err := engine.Register(ctx, workflow.Definition{Type: "t.halfway", States: []workflow.State{
			{Name: "begin", Kind: workflow.Start, Next: []string{"work"}, Handler: func(sc workflow.StepContext) (workflow.Next, error) {
				return workflow.MoveTo("work"), sc.SetVar("progress", "begun")
			}},
			{Name: "work", Kind: workflow.Normal, Next: []string{"done"}, Handler: func(sc workflow.StepContext) (workflow.Next, error) {
				if err := sc.SetVar("progress", "half written"); err != nil {
					return workflow.Next{}, err
				}
				if err := sc.SetVar("scratch", map[string]int{"attempt": sc.Attempt()}); err != nil {
					return workflow.Next{}, err
				}
				if sc.Attempt() == 1 {
					return workflow.Next{}, errors.New("the disk is full")
				}
				return workflow.MoveTo("nowhere"), nil // not a next state of work: refused
			}},
			{Name: "done", Kind: workflow.End},
			{Name: "failed", Kind: workflow.ErrorKind},
		}, DefaultRetry: workflow.RetryPolicy{MaxAttempts: 2}})
		require.NoError(t, err)
		res, err := engine.Start(ctx, workflow.StartParams{Type: "t.halfway"})
		require.NoError(t, err)
		id := res.Workflow.ID
		var w *persistence.Workflow
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			runDue(t, store, engine) // the second attempt is due after the policy's backoff
			w, err = store.WorkflowGet(ctx, id)
			require.NoError(t, err)
			if w.Status.Terminal() || w.Status == persistence.StatusManual || time.Now().After(deadline) {
				break
			}
		}
		require.Equal(t, persistence.StatusFailed, w.Status, "both attempts of work failed")
		var vars map[string]any
		require.NoError(t, json.Unmarshal(w.Variables, &vars))
		require.Equal(t, map[string]any{"progress": "begun"}, vars, "the variables the successful begin step left")

		actions, err := store.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: []int64{id}})
		require.NoError(t, err)
		var failed []int64
		for _, a := range actions {
			if a.Type == persistence.ActionStateExecutionFailed {
				failed = append(failed, a.ID)
			}
		}
		require.Len(t, failed, 2)
		written, err := store.ActionVariableList(ctx, failed)
		require.NoError(t, err)
		require.Empty(t, written, "the failed attempts recorded no variable changes")
	})
}
