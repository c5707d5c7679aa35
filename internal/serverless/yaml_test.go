package serverless_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// Documents are YAML 1.2: only true and false are booleans, so unquoted on, yes, n, off (keys or
// values) are the strings they read as; a key that is a number or a boolean is its text. A value
// JSON cannot hold, or a key given twice, is refused at deploy.
func TestYAML12Document(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		n.startWorker(t)
		def := n.deploy(t, `
document: {dsl: '1.0.3', namespace: yaml, name: dialect, version: '0.1.0'}
do:
  - keys:
      set:
        on: yes
        n: off
        Y: No
        true: false
        1: 2
        when: 2026-11-28
`)
		w := n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.Equal(t, map[string]any{"on": "yes", "n": "off", "Y": "No", "true": false, "1": float64(2), "when": "2026-11-28"}, output(t, w))

		for _, c := range []struct{ doc, says string }{
			{"do:\n  - a: {set: {x: .inf}}\n", "not a number JSON can hold"},
			{"do:\n  - a:\n      set:\n        x: 1\n        x: 2\n", "already defined"},
			{"do:\n  - a: {set: {1: a, '1': b}}\n", "already defined"},
		} {
			_, err := n.engine.Deploy(context.Background(), header+c.doc, "")
			var we *workflow.Error
			require.ErrorAs(t, err, &we, "%v", err)
			require.Equal(t, workflow.CodeInvalidInput, we.Code)
			require.Contains(t, we.Message, c.says)
		}
	})
}
