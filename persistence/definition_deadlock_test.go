package persistence_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// Many nodes saving the same definitions at once (each node deploys its definitions at start) all
// get them saved, whatever deadlocks their inserts meet: on MariaDB, concurrent inserts that find
// a duplicate take shared locks on the unique index and deadlock, and the one InnoDB rolled back
// failed its save ("Deadlock found when trying to get lock").
func TestDefinitionSaveManyAtOnce(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		const rounds, types, nodes = 5, 4, 48
		for round := range rounds {
			errs := make([]error, types*nodes)
			ids := make([]int64, types*nodes)
			var wg sync.WaitGroup
			for i := range errs {
				wg.Go(func() {
					d, _, err := store.DefinitionSave(ctx, persistence.DefinitionSaveParams{Type: fmt.Sprintf("many.%d.%d", round, i%types),
						Checksum: "same", Spec: json.RawMessage(`{}`), ExecutorGroup: "default"})
					errs[i] = err
					if err == nil {
						ids[i] = d.ID
					}
				})
			}
			wg.Wait()
			for i, err := range errs {
				require.NoError(t, err, "round %d, save %d", round, i)
				require.Equal(t, ids[i%types], ids[i], "round %d, save %d: the one version of its type", round, i)
			}
		}
	})
}
