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

// TestPublishEvent delivers one CloudEvent to every workflow whose listen task waits for its
// type, once; an event without a type is refused naming the attribute.
func TestPublishEvent(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		n.startWorker(t)
		ctx := context.Background()
		def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: t, name: listener, version: '1.0.0'}
do:
  - wait:
      listen: {to: {one: {with: {type: com.example.price.changed}}}}
      output: {as: '.[0]'}
  - record:
      set: {price: '${ .price }'}
`)
		a, b := n.start(t, def.Type, `{}`), n.start(t, def.Type, `{}`)
		for _, w := range []*persistence.Workflow{a, b} {
			n.waitFor(t, w.ID, "listening", func(w *persistence.Workflow) bool { return w.Status == persistence.StatusWaiting })
		}
		event := json.RawMessage(`{"specversion":"1.0","id":"e-1","source":"test","type":"com.example.price.changed","data":{"price":9}}`)
		delivered, err := n.engine.PublishEvent(ctx, event)
		require.NoError(t, err)
		require.Len(t, delivered, 2)
		for _, w := range []*persistence.Workflow{a, b} {
			w = n.waitEnded(t, w.ID)
			require.Equal(t, map[string]any{"price": float64(9)}, output(t, w), lastError(w))
		}
		delivered, err = n.engine.PublishEvent(ctx, event)
		require.NoError(t, err)
		require.Empty(t, delivered, "nobody listens any more")

		_, err = n.engine.PublishEvent(ctx, json.RawMessage(`{"specversion":"1.0","id":"e-2","source":"test"}`))
		var we *workflow.Error
		require.ErrorAs(t, err, &we)
		require.Equal(t, workflow.CodeInvalidInput, we.Code)
		require.Equal(t, "event.type", we.Field)
	})
}
