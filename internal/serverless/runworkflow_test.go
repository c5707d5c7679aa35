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

// TestRunWorkflow runs a deployed definition as a child workflow: the parent waits for it and
// takes its output; a child that faults faults the parent's task (a try may catch it); a version
// that was never deployed faults the parent's task.
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
		require.Contains(t, lastError(w), `no deployed version of lib.double is \"1.0.0\"`)
	})
}

// TestRunWorkflowPinnedVersion: a parent that pins its child's version (to 1.0.0) failed once 1.0.1
// was deployed ("the newest version is 1.0.1"); it now runs 1.0.0 however many came after, and a
// parent that pins the newest runs that.
func TestRunWorkflowPinnedVersion(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		n.startWorker(t)
		to := "document: {dsl: '1.0.0', namespace: lib, name: to, version: '%s'}\ndo:\n  - mark: {set: {ran: '%s'}}\n"
		n.deploy(t, fmt.Sprintf(to, "1.0.0", "1.0.0"))
		pinned := n.deploy(t, "document: {dsl: '1.0.0', namespace: app, name: pinned, version: '1.0.0'}\ndo:\n  - child: {run: {workflow: {namespace: lib, name: to, version: '1.0.0'}}}\n")
		latest := n.deploy(t, "document: {dsl: '1.0.0', namespace: app, name: latest, version: '1.0.0'}\ndo:\n  - child: {run: {workflow: {namespace: lib, name: to, version: '1.0.2'}}}\n")
		for _, v := range []string{"1.0.1", "1.0.2"} {
			n.deploy(t, fmt.Sprintf(to, v, v))
		}
		w := n.waitEnded(t, n.start(t, pinned.Type, `{}`).ID)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.Equal(t, map[string]any{"ran": "1.0.0"}, output(t, w))
		w = n.waitEnded(t, n.start(t, latest.Type, `{}`).ID)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.Equal(t, map[string]any{"ran": "1.0.2"}, output(t, w))
	})
}

// TestRunWorkflowItselfIsRefused: a document that runs its own workflow made 9,172 workflows in
// 30 s; it is refused at deploy at the pointer of the task. Running another version of the same
// type is not running itself.
func TestRunWorkflowItselfIsRefused(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		for _, version := range []string{"", ", version: '2.0.0'"} {
			_, err := n.engine.Deploy(context.Background(), "document: {dsl: '1.0.0', namespace: app, name: loop, version: '2.0.0'}\ndo:\n  - first: {set: {a: 1}}\n"+
				"  - again: {run: {workflow: {namespace: app, name: loop"+version+"}}}\n", "")
			var we *workflow.Error
			require.ErrorAs(t, err, &we)
			require.Equal(t, workflow.CodeInvalidInput, we.Code)
			require.Equal(t, "/do/1/again", we.Field)
			require.Contains(t, we.Message, "a workflow may not run itself")
			_, err = store.DefinitionGet(context.Background(), persistence.DefinitionGetParams{Type: "app.loop"})
			require.ErrorIs(t, err, persistence.ErrNotFound, "a refused document is not stored")
		}
		n.deploy(t, "document: {dsl: '1.0.0', namespace: app, name: loop, version: '2.0.0'}\ndo:\n  - older: {run: {workflow: {namespace: app, name: loop, version: '1.0.0'}}}\n")
	})
}
