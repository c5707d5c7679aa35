package serverless_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// TestExamples runs the documents of examples/ to their end on every backend.
func TestExamples(t *testing.T) {
	t.Parallel()
	read := func(t *testing.T, name string) string {
		b, err := os.ReadFile("../../examples/" + name)
		require.NoError(t, err)
		return string(b)
	}
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		n.startWorker(t)

		t.Run("order-approval", func(t *testing.T) {
			def := n.deploy(t, read(t, "order-approval.yaml"))
			small := n.waitEnded(t, n.start(t, def.Type, `{"order":{"id":"o-1","total":20}}`).ID)
			require.Equal(t, map[string]any{"order": "o-1", "status": "approved", "approvedBy": "policy"}, output(t, small), lastError(small))

			large := n.start(t, def.Type, `{"order":{"id":"o-2","total":5000}}`)
			n.waitFor(t, large.ID, "waiting for approval", func(w *persistence.Workflow) bool { return w.Status == persistence.StatusWaiting })
			_, err := n.engine.Signal(context.Background(), workflow.SignalParams{ID: large.ID, Name: "com.example.order.approved", Payload: json.RawMessage(`{"by":"ann"}`)})
			require.NoError(t, err)
			w := n.waitEnded(t, large.ID)
			require.Equal(t, map[string]any{"order": "o-2", "status": "approved", "approvedBy": "ann"}, output(t, w), lastError(w))
		})

		t.Run("fan-out", func(t *testing.T) {
			def := n.deploy(t, read(t, "fan-out.yaml"))
			w := n.waitEnded(t, n.start(t, def.Type, `{"weight":10}`).ID)
			require.Equal(t, map[string]any{"weight": float64(10), "cheapest": "road", "price": float64(30),
				"asked": []any{"road", "rail", "air"}}, output(t, w), lastError(w))
			w = n.waitEnded(t, n.start(t, def.Type, `{"weight":100}`).ID)
			require.Equal(t, map[string]any{"weight": float64(100), "cheapest": "rail", "price": float64(175),
				"asked": []any{"road", "rail", "air"}}, output(t, w), lastError(w))
			require.Len(t, childrenOf(t, store, w.ID), 3, "one child workflow per branch")
		})

		t.Run("retry-recovery", func(t *testing.T) {
			def := n.deploy(t, read(t, "retry-recovery.yaml"))
			w := n.waitEnded(t, n.start(t, def.Type, `{"succeedOnAttempt":3}`).ID)
			require.Equal(t, map[string]any{"reserved": true, "attempts": float64(3), "reason": nil}, output(t, w), lastError(w))
			w = n.waitEnded(t, n.start(t, def.Type, `{"succeedOnAttempt":99}`).ID)
			require.Equal(t, map[string]any{"reserved": false, "attempts": float64(5), "reason": "Inventory unavailable"}, output(t, w), lastError(w))
		})
	})
}
