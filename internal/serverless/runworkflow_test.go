package serverless_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// TestRunWorkflow runs a deployed definition as a child workflow: the parent waits for it and
// takes its output; a child that faults faults the parent's task (a try may catch it); a version
// that is not the newest deployed one is refused.
func TestRunWorkflow(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		n.startWorker(t)
		n.deploy(t, `
document: {dsl: '1.0.0', namespace: lib, name: double, version: '2.0.0'}
do:
  - check:
      if: .number < 0
      raise: {error: {type: https://example.com/errors/negative, status: 400, title: Negative}}
  - double:
      set: {doubled: '${ .number * 2 }'}
`)
		parent := n.deploy(t, `
document: {dsl: '1.0.0', namespace: app, name: parent, version: '1.0.0'}
do:
  - child:
      run:
        workflow: {namespace: lib, name: double, version: '2.0.0', input: {number: '${ .value }'}}
  - after:
      set: {result: '${ .doubled }'}
`)
		w := n.waitEnded(t, n.start(t, parent.Type, `{"value": 21}`).ID)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.Equal(t, map[string]any{"result": float64(42)}, output(t, w))

		w = n.waitEnded(t, n.start(t, parent.Type, `{"value": -1}`).ID)
		require.Equal(t, persistence.StatusFailed, w.Status)
		var p map[string]any
		require.NoError(t, json.Unmarshal([]byte(lastError(w)), &p))
		require.Equal(t, "https://example.com/errors/negative", p["type"])
		require.Equal(t, "/do/0/child", p["instance"])

		wrong := n.deploy(t, `
document: {dsl: '1.0.0', namespace: app, name: wrongversion, version: '1.0.0'}
do:
  - child:
      run:
        workflow: {namespace: lib, name: double, version: '1.0.0'}
`)
		w = n.waitEnded(t, n.start(t, wrong.Type, `{}`).ID)
		require.Equal(t, persistence.StatusFailed, w.Status)
		require.Contains(t, lastError(w), `not \"1.0.0\"`)
	})
}
