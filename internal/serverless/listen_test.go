package serverless_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// TestListenFilters: a listen task takes only the events its filters match (attributes as
// literals, regular expressions or expressions; correlations with or without expect), consumes
// the others and listens on; with all it waits for an event per filter. publishEvent thus reaches
// only the workflows an event correlates with.
func TestListenFilters(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		n.startWorker(t)
		ctx := context.Background()
		seq := 0
		publish := func(t *testing.T, typ, subject string, data any) []*persistence.Workflow {
			t.Helper()
			seq++
			b, err := json.Marshal(map[string]any{"specversion": "1.0", "id": fmt.Sprint("e-", seq), "source": "test", "subject": subject, "type": typ, "data": data})
			require.NoError(t, err)
			ws, err := n.engine.PublishEvent(ctx, b)
			require.NoError(t, err)
			return ws
		}
		waiting := func(t *testing.T, id int64) {
			t.Helper()
			n.waitFor(t, id, "listening", func(w *persistence.Workflow) bool { return w.Status == persistence.StatusWaiting })
		}

		t.Run("correlation with expect: an event reaches only its workflow", func(t *testing.T) {
			def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: listen, name: payment, version: '1.0.0'}
do:
  - paid:
      listen:
        to:
          one:
            with: {type: com.example.payment.received}
            correlate:
              order: {from: .data.orderId, expect: '${ .orderId }'}
`)
			a, b := n.start(t, def.Type, `{"orderId":"A"}`), n.start(t, def.Type, `{"orderId":"B"}`)
			waiting(t, a.ID)
			waiting(t, b.ID)
			publish(t, "com.example.payment.received", "bank", map[string]any{"orderId": "A", "amount": 5})
			w := n.waitEnded(t, a.ID)
			require.Equal(t, []any{map[string]any{"orderId": "A", "amount": float64(5)}}, output(t, w), lastError(w))
			waiting(t, b.ID) // it consumed A's payment and listens on
			publish(t, "com.example.payment.received", "bank", map[string]any{"orderId": "B", "amount": 7})
			w = n.waitEnded(t, b.ID)
			require.Equal(t, []any{map[string]any{"orderId": "B", "amount": float64(7)}}, output(t, w), lastError(w))
		})

		t.Run("all filters, correlated by the first event, attributes by pattern and expression", func(t *testing.T) {
			def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: listen, name: shipment, version: '1.0.0'}
do:
  - ready:
      listen:
        to:
          all:
            - with: {type: com.example.order.status, subject: 'warehouse-\d+'}
              correlate: {order: {from: .data.order}}
            - with: {type: com.example.order.status, subject: billing, data: '${ .amount > 100 }'}
              correlate: {order: {from: .data.order}}
        read: envelope
      output:
        as: 'map(.subject)'
`)
			w := n.start(t, def.Type, `{}`)
			// Kept until the workflow listens: a signal that arrives first.
			_, err := n.engine.Signal(ctx, workflow.SignalParams{ID: w.ID, Name: "com.example.order.status",
				Payload: json.RawMessage(`{"specversion":"1.0","id":"s-1","source":"test","subject":"warehouse-7","type":"com.example.order.status","data":{"order":1}}`)})
			require.NoError(t, err)
			waiting(t, w.ID)
			publish(t, "com.example.order.status", "billing", map[string]any{"order": 2, "amount": 500}) // another order
			waiting(t, w.ID)
			publish(t, "com.example.order.status", "billing", map[string]any{"order": 1, "amount": 50}) // too small
			waiting(t, w.ID)
			publish(t, "com.example.order.status", "billing", map[string]any{"order": 1, "amount": 150})
			got := n.waitEnded(t, w.ID)
			require.Equal(t, []any{"warehouse-7", "billing"}, output(t, got), lastError(got))
		})

		t.Run("until without any is refused at deploy", func(t *testing.T) {
			_, err := n.engine.Deploy(ctx, `
document: {dsl: '1.0.0', namespace: listen, name: untilone, version: '1.0.0'}
do:
  - either:
      listen:
        to:
          all:
            - with: {type: com.example.a}
            - with: {type: com.example.b}
          until: '${ true }'
`, "")
			var we *workflow.Error
			require.ErrorAs(t, err, &we)
			require.Equal(t, workflow.CodeInvalidInput, we.Code)
			require.Equal(t, "/do/0/either/listen/to/until", we.Field)
		})
	})
}
