package graph_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// An ID of the wrong kind is named with the right article: "not an Action ID", "not a Workflow ID".
func TestWrongKindOfIDIsNamedInPlainEnglish(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		id := b.start(t, map[string]any{"type": "test.flow"})
		e := b.fails(t, "INVALID_INPUT", `query($id: ID!) { workflow(id: $id) { variablesAt(actionId: $id) } }`, map[string]any{"id": id})
		require.Contains(t, e.Message, "not an Action ID")
		e = b.fails(t, "INVALID_INPUT", `query($id: ID!) { workflow(id: $id) { id } }`, map[string]any{"id": "nope"})
		require.Contains(t, e.Message, "not a Workflow ID")
	})
}
