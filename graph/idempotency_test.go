package graph_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

func TestIdempotencyKeysOverGraphQL(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		const start = `mutation($in: StartWorkflowInput!) { startWorkflow(input: $in) { created workflow { id } } }`
		var first struct {
			StartWorkflow struct {
				Created  bool
				Workflow struct{ ID string }
			}
		}
		b.must(t, start, &first, map[string]any{"in": map[string]any{"type": "test.flow", "input": map[string]any{"n": 1}, "idempotencyKey": "k"}})
		require.True(t, first.StartWorkflow.Created)
		e := b.fails(t, "CONFLICT", start, map[string]any{"in": map[string]any{"type": "test.flow", "input": map[string]any{"n": 2}, "idempotencyKey": "k"}})
		require.Equal(t, "idempotencyKey", e.Extensions["field"])

		const many = `mutation($in: StartWorkflowsInput!) { startWorkflows(input: $in) { results { created workflow { id } } } }`
		var got struct {
			StartWorkflows struct {
				Results []struct {
					Created  bool
					Workflow struct{ ID string }
				}
			}
		}
		b.must(t, many, &got, map[string]any{"in": map[string]any{"workflows": []any{
			map[string]any{"type": "test.flow", "idempotencyKey": "m"},
			map[string]any{"type": "test.flow", "idempotencyKey": "m"},
		}}})
		require.Len(t, got.StartWorkflows.Results, 2)
		require.True(t, got.StartWorkflows.Results[0].Created)
		require.False(t, got.StartWorkflows.Results[1].Created)
		require.Equal(t, got.StartWorkflows.Results[0].Workflow.ID, got.StartWorkflows.Results[1].Workflow.ID)
		e = b.fails(t, "CONFLICT", many, map[string]any{"in": map[string]any{"workflows": []any{
			map[string]any{"type": "test.flow"},
			map[string]any{"type": "test.flow", "priority": 3, "idempotencyKey": "m"},
		}}})
		require.Equal(t, "workflows[1].idempotencyKey", e.Extensions["field"])
	})
}
