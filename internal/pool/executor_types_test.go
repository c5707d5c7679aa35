package pool_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// A pool records on its executor row the types it claims, and again when a new type is
// registered on its node.
func TestPoolRecordsTheTypesItClaims(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		b := setup(t, store)
		w := b.startWorker(t, steadyOptions())
		typesOf := func() []string {
			deadline := time.Now().Add(60 * time.Second)
			for {
				if id := w.ExecutorID(); id != 0 {
					es, err := store.ExecutorGetMany(ctx, []int64{id})
					require.NoError(t, err)
					if len(es) == 1 {
						if types, ok := es[0].TypeList(); ok {
							return types
						}
					}
				}
				require.True(t, time.Now().Before(deadline), "the executor's types were never recorded")
				time.Sleep(20 * time.Millisecond)
			}
		}
		require.Equal(t, b.engine.Types(workflow.DefaultGroup), typesOf())
		_, err := b.engine.Register(ctx, workflow.Definition{Type: "t.late", States: []workflow.State{{Name: "end", Kind: workflow.Start,
			Handler: func(workflow.StepContext) (workflow.Next, error) { return workflow.Finish(), nil }, Next: []string{"done"}}, {Name: "done", Kind: workflow.End}}})
		require.NoError(t, err)
		b.start(t, "t.late", `{}`) // wakes the claim loop
		deadline := time.Now().Add(60 * time.Second)
		for !slices.Contains(typesOf(), "t.late") {
			require.True(t, time.Now().Before(deadline), "the new type was never recorded")
			time.Sleep(20 * time.Millisecond)
		}
	})
}
