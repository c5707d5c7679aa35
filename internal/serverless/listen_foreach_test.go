package serverless_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// A listen task's foreach where the spec places it, beside listen in the task: every event of an
// empty any is taken until the condition holds, and the loop processes each in order, its tasks
// states at <task>/foreach/do. Given both beside and inside listen, the document is refused.
func TestListenForeachBesideListen(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		n.startWorker(t)
		ctx := context.Background()
		def := n.deploy(t, `
document: {dsl: '1.0.3', namespace: beside, name: foreach, version: '0.1.0'}
do:
  - gossips:
      listen:
        to:
          any: []
          until: '${ length >= 2 }'
      foreach:
        item: event
        at: i
        do:
          - note:
              set:
                heard: '${ (if type == "array" then [] else .heard end) + [{at: $i, said: $event.said}] }'
`)
		w := n.start(t, def.Type, `{}`)
		n.waitFor(t, w.ID, "listening", func(w *persistence.Workflow) bool { return w.Status == persistence.StatusWaiting })
		for i, said := range []string{"first", "second"} {
			b, err := json.Marshal(map[string]any{"specversion": "1.0", "id": "g-" + said, "source": "test", "type": "com.example.gossip", "data": map[string]any{"said": said}})
			require.NoError(t, err)
			ws, err := n.engine.PublishEvent(ctx, b)
			require.NoError(t, err)
			require.Len(t, ws, 1)
			if i == 0 {
				// The event woke the workflow: the second reaches it once it listens again (a
				// fixed sleep was not always enough on a loaded machine).
				require.NotEqual(t, persistence.StatusWaiting, ws[0].Status)
				n.waitFor(t, w.ID, "listening again", func(w *persistence.Workflow) bool { return w.Status == persistence.StatusWaiting })
			}
		}
		got := n.waitEnded(t, w.ID)
		require.Equal(t, persistence.StatusFinished, got.Status, lastError(got))
		require.Equal(t, map[string]any{"heard": []any{
			map[string]any{"at": float64(0), "said": "first"},
			map[string]any{"at": float64(1), "said": "second"},
		}}, output(t, got))
		require.Contains(t, statesRun(t, store, w.ID), "/do/0/gossips/foreach/do/0/note")

		_, err := n.engine.Deploy(ctx, header+`do:
  - twice:
      listen:
        to: {any: []}
        foreach: {do: [{a: {set: {a: 1}}}]}
      foreach: {do: [{b: {set: {b: 1}}}]}
`, "")
		var we *workflow.Error
		require.ErrorAs(t, err, &we, "%v", err)
		require.Equal(t, workflow.CodeInvalidInput, we.Code)
		require.Equal(t, "/do/0/twice/foreach", we.Field)
		require.Contains(t, we.Message, "given twice")

		_, err = n.engine.Deploy(ctx, header+"do:\n  - l: {listen: {to: {any: []}}, foreach: {do: [{x: {set: {a: 1}}}], outptu: {}}}\n", "")
		require.ErrorAs(t, err, &we, "%v", err)
		require.Equal(t, "/do/0/l/foreach/outptu", we.Field)
	})
}
