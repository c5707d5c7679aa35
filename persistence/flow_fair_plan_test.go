package persistence_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// On PostgreSQL, a fair flow claim reads each key's oldest due workflow by the first rows of an
// index in claim order (workflows_flow_due_idx, or the due index for a key holding most of the
// queue), after ANALYZE, never by sorting the key's queue.
func TestFlowKeyHeadsReadTheIndexInClaimOrder(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, persistence.KindPostgres)
	ctx := context.Background()
	_, err := store.DB().ExecContext(ctx, `INSERT INTO workflows (type, definition_version, status, state, next_activation,
		executor_group, created, modified, concurrency_key)
		SELECT 'flow.plan', 1, 'CREATED', 'run', now() - interval '1 hour' + (i || ' ms')::interval, 'default', now(), now(),
			CASE WHEN i <= 20000 THEN 'long' ELSE 'k' || (i % 500) END
		FROM generate_series(1, 30000) i`)
	require.NoError(t, err)
	_, err = store.DB().ExecContext(ctx, "ANALYZE workflows")
	require.NoError(t, err)
	query, args := persistence.KeyHeadsForTest(persistence.WorkflowClaimParams{Group: "default"}, persistence.FlowSpec{Type: "flow.plan"},
		persistence.KeyHeadsForTestOf("long", "k7"), persistence.Now())
	var plan []string
	require.NoError(t, store.DB().NewRaw("EXPLAIN "+query, args...).Scan(ctx, &plan))
	text := strings.Join(plan, "\n")
	require.Contains(t, text, "workflows_flow_due_idx", text)
	require.NotContains(t, text, "Sort", text)
	require.NotContains(t, text, "Bitmap", text)
}
