package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
	"github.com/cairnflow/cairn/workflow/demo"
)

// TestStepEffectsCommitWithTheStep: the signal a step sends and the workflow it cancels are
// written with the step's completion; a step that fails after asking for them leaves neither.
func TestStepEffectsCommitWithTheStep(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := engine.New(store, engine.Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
		require.NoError(t, demo.Register(ctx, engine))
		type order struct {
			Signal, Cancel int64
			Fail           bool
		}
		_, err := engine.Register(ctx, workflow.Definition{Type: "t.effects", States: []workflow.State{
			{Name: "run", Kind: workflow.Start, Next: []string{"done"}, Handler: func(c workflow.StepContext) (workflow.Next, error) {
				var o order
				if err := c.Input(&o); err != nil {
					return workflow.Next{}, err
				}
				if err := c.SendSignal(workflow.SignalRequest{ID: o.Signal, Name: "note", Payload: json.RawMessage(`{"from":"t.effects"}`)}); err != nil {
					return workflow.Next{}, err
				}
				if err := c.CancelWorkflow(workflow.CancelRequest{ID: o.Cancel, Reason: "no longer needed"}); err != nil {
					return workflow.Next{}, err
				}
				if o.Fail {
					return workflow.Next{}, workflow.NonRetryable(errors.New("failed after asking"))
				}
				return workflow.Finish(), nil
			}},
			{Name: "done", Kind: workflow.End},
			{Name: "failed", Kind: workflow.ErrorKind},
		}})
		require.NoError(t, err)
		runPool(t, engine)

		for _, fail := range []bool{true, false} {
			signalled, cancelled := start(t, engine, "demo.approval"), start(t, engine, "demo.approval")
			in, err := json.Marshal(order{Signal: signalled, Cancel: cancelled, Fail: fail})
			require.NoError(t, err)
			res, err := engine.Start(ctx, workflow.StartParams{Type: "t.effects", Input: in})
			require.NoError(t, err)
			waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			w, err := engine.Wait(waitCtx, res.Workflow.ID)
			cancel()
			require.NoError(t, err)
			sigs, err := store.SignalList(ctx, []int64{signalled})
			require.NoError(t, err)
			other, err := store.WorkflowGet(ctx, cancelled)
			require.NoError(t, err)
			if fail {
				require.Equal(t, persistence.StatusFailed, w.Status)
				require.Empty(t, sigs, "the failed step's signal is not delivered")
				require.NotEqual(t, persistence.StatusCancelled, other.Status, "the failed step cancels nothing")
				continue
			}
			require.Equal(t, persistence.StatusFinished, w.Status)
			require.Len(t, sigs, 1)
			require.Equal(t, "note", sigs[0].Name)
			require.Equal(t, persistence.StatusCancelled, other.Status)
		}
	})
}
