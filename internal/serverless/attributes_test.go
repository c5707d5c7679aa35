package serverless_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// A document sets its workflow's search attributes by exporting them to $context.searchAttributes;
// a key that leaves the object removes its attribute, and a bad value fails the workflow.
func TestDocumentsSetSearchAttributesThroughTheContext(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: test, name: tagged, version: '1.0.0'}
do:
  - tag:
      set: {region: eu, amount: '${ .n }'}
      export: {as: '{ searchAttributes: { region: .region, amount: .amount, when: "2026-04-01T10:00:00Z" } }'}
  - pause:
      wait: {milliseconds: 1}
  - retag:
      set: {region: us}
      export: {as: '$context + { searchAttributes: ($context.searchAttributes + { region: .region } | del(.amount)) }'}
`)
		n.startWorker(t)
		w := n.start(t, def.Type, `{"n": 42}`)
		w = n.waitEnded(t, w.ID)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		attrs, err := store.WorkflowAttributeMaps(context.Background(), []int64{w.ID})
		require.NoError(t, err)
		got := map[string]any{}
		for k, v := range attrs[w.ID] {
			got[k] = v.JSONValue()
		}
		require.Equal(t, map[string]any{"region": "us", "when": "2026-04-01T10:00:00Z"}, got)

		bad := n.deploy(t, `
document: {dsl: '1.0.0', namespace: test, name: badtag, version: '1.0.0'}
do:
  - tag:
      set: {x: 1}
      export: {as: '{ searchAttributes: { region: { nested: true } } }'}
`)
		w = n.waitEnded(t, n.start(t, bad.Type, `{}`).ID)
		require.NotEqual(t, persistence.StatusFinished, w.Status)
		require.Contains(t, lastError(w), "region")
	})
}
