package serverless_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// TestListenSeveralTypes: one listen task waits for events of several types (all, any, an empty
// any for every event), until a condition holds on the events taken or until other events come,
// and processes the events it took with foreach. Events come by publishEvent, or as signals sent
// to the workflow, kept when they arrive before it listens.
func TestListenSeveralTypes(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		n.startWorker(t)
		ctx := context.Background()
		seq := 0
		publish := func(t *testing.T, typ string, data any) []int64 {
			t.Helper()
			seq++
			b, err := json.Marshal(map[string]any{"specversion": "1.0", "id": fmt.Sprint("m-", seq), "source": "test", "type": typ, "data": data})
			require.NoError(t, err)
			ws, err := n.engine.PublishEvent(ctx, b)
			require.NoError(t, err)
			var ids []int64
			for _, w := range ws {
				ids = append(ids, w.ID)
			}
			return ids
		}
		waiting := func(t *testing.T, id int64) {
			t.Helper()
			n.waitFor(t, id, "listening", func(w *persistence.Workflow) bool { return w.Status == persistence.StatusWaiting })
		}
		// stillWaiting checks that a workflow went on waiting after an event it took.
		stillWaiting := func(t *testing.T, id int64) {
			t.Helper()
			time.Sleep(300 * time.Millisecond)
			waiting(t, id)
		}

		t.Run("all over two types, one sent before the workflow listens", func(t *testing.T) {
			def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: many, name: all, version: '1.0.0'}
do:
  - both:
      listen:
        to:
          all:
            - with: {type: com.example.paid}
            - with: {type: com.example.shipped}
`)
			w := n.start(t, def.Type, `{}`)
			// A signal sent at once is kept until the task listens.
			_, err := n.engine.Signal(ctx, workflow.SignalParams{ID: w.ID, Name: "com.example.shipped", Payload: json.RawMessage(`{"by": "dhl"}`)})
			require.NoError(t, err)
			waiting(t, w.ID)
			stillWaiting(t, w.ID) // shipped came; paid not yet
			require.Empty(t, publish(t, "com.example.other", 1))
			require.Equal(t, []int64{w.ID}, publish(t, "com.example.paid", map[string]any{"amount": 5}))
			got := n.waitEnded(t, w.ID)
			require.Equal(t, []any{map[string]any{"by": "dhl"}, map[string]any{"amount": float64(5)}}, output(t, got), lastError(got))
		})

		t.Run("any over two types", func(t *testing.T) {
			def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: many, name: any, version: '1.0.0'}
do:
  - either:
      listen:
        to:
          any:
            - with: {type: com.example.approved}
            - with: {type: com.example.rejected, subject: 'desk-\d+'}
        read: envelope
      output:
        as: 'map(.type)'
`)
			a, b := n.start(t, def.Type, `{}`), n.start(t, def.Type, `{}`)
			waiting(t, a.ID)
			waiting(t, b.ID)
			require.ElementsMatch(t, []int64{a.ID, b.ID}, publish(t, "com.example.approved", 1))
			for _, id := range []int64{a.ID, b.ID} {
				got := n.waitEnded(t, id)
				require.Equal(t, []any{"com.example.approved"}, output(t, got), lastError(got))
			}
			c := n.start(t, def.Type, `{}`)
			waiting(t, c.ID)
			// A rejection whose subject does not match is consumed; one that matches ends the task.
			_, err := n.engine.Signal(ctx, workflow.SignalParams{ID: c.ID, Name: "com.example.rejected",
				Payload: json.RawMessage(`{"specversion": "1.0", "id": "r1", "source": "s", "type": "com.example.rejected", "subject": "web"}`)})
			require.NoError(t, err)
			stillWaiting(t, c.ID)
			_, err = n.engine.Signal(ctx, workflow.SignalParams{ID: c.ID, Name: "com.example.rejected",
				Payload: json.RawMessage(`{"specversion": "1.0", "id": "r2", "source": "s", "type": "com.example.rejected", "subject": "desk-4"}`)})
			require.NoError(t, err)
			got := n.waitEnded(t, c.ID)
			require.Equal(t, []any{"com.example.rejected"}, output(t, got), lastError(got))
		})

		t.Run("an empty any takes any event", func(t *testing.T) {
			def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: many, name: anything, version: '1.0.0'}
do:
  - whatever:
      listen:
        to:
          any: []
        read: envelope
      output:
        as: '.[0] | {type, data}'
`)
			w := n.start(t, def.Type, `{}`)
			waiting(t, w.ID)
			require.Equal(t, []int64{w.ID}, publish(t, "org.random.thing", map[string]any{"x": 1}))
			got := n.waitEnded(t, w.ID)
			require.Equal(t, map[string]any{"type": "org.random.thing", "data": map[string]any{"x": float64(1)}}, output(t, got), lastError(got))
		})

		t.Run("any until a condition on the events taken", func(t *testing.T) {
			def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: many, name: untilcond, version: '1.0.0'}
do:
  - collect:
      listen:
        to:
          any:
            - with: {type: com.example.reading}
            - with: {type: com.example.manual}
          until: '${ map(.value) | add >= $input.limit }'
`)
			w := n.start(t, def.Type, `{"limit": 10}`)
			waiting(t, w.ID)
			publish(t, "com.example.reading", map[string]any{"value": 4})
			stillWaiting(t, w.ID)
			publish(t, "com.example.manual", map[string]any{"value": 3})
			stillWaiting(t, w.ID)
			publish(t, "com.example.reading", map[string]any{"value": 5})
			got := n.waitEnded(t, w.ID)
			require.Equal(t, []any{map[string]any{"value": float64(4)}, map[string]any{"value": float64(3)}, map[string]any{"value": float64(5)}}, output(t, got), lastError(got))
		})

		t.Run("any until events", func(t *testing.T) {
			def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: many, name: untilevents, version: '1.0.0'}
do:
  - collect:
      listen:
        to:
          any:
            - with: {type: com.example.item}
          until:
            one:
              with: {type: com.example.done}
`)
			w := n.start(t, def.Type, `{}`)
			waiting(t, w.ID)
			publish(t, "com.example.item", "a")
			stillWaiting(t, w.ID) // publishEvent reaches a workflow while it listens
			publish(t, "com.example.item", "b")
			stillWaiting(t, w.ID)
			publish(t, "com.example.done", "end")
			got := n.waitEnded(t, w.ID)
			require.Equal(t, []any{"a", "b"}, output(t, got), lastError(got))
		})

		t.Run("foreach over the events taken", func(t *testing.T) {
			def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: many, name: foreach, version: '1.0.0'}
do:
  - orders:
      listen:
        to:
          all:
            - with: {type: com.example.order.a}
            - with: {type: com.example.order.b}
        foreach:
          item: order
          at: i
          do:
            - add:
                set:
                  total: '${ (if type == "array" then 0 else .total end) + $order.qty }'
                  seen: '${ (if type == "array" then [] else .seen end) + [$i] }'
      output:
        as: '${ . + {listened: $input.who} }'
  - done:
      set: {done: true}
      output:
        as: '${ $input + . }'
`)
			w := n.start(t, def.Type, `{"who": "ann"}`)
			waiting(t, w.ID)
			publish(t, "com.example.order.b", map[string]any{"qty": 2})
			stillWaiting(t, w.ID)
			publish(t, "com.example.order.a", map[string]any{"qty": 5})
			got := n.waitEnded(t, w.ID)
			require.Equal(t, map[string]any{"total": float64(7), "seen": []any{float64(0), float64(1)}, "listened": "ann", "done": true}, output(t, got), lastError(got))
			require.Contains(t, statesRun(t, store, w.ID), "/do/0/orders/listen/foreach/do/0/add")
		})
	})
}
