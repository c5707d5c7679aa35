package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// Concurrent starts share transactions (on PostgreSQL the rows' transaction IDs show it), and each
// caller still gets the answer it would get alone:
// replays of one idempotency key share one workflow, a key reused with other content is refused for
// that caller only, one external ID gives one workflow, an invalid request fails alone, and plain
// starts each create their own.
func TestConcurrentStartsKeepTheirOwnAnswers(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		const callers = 200
		results := make([]workflow.StartResult, callers)
		errs := make([]error, callers)
		release := make(chan struct{})
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				p := workflow.StartParams{Type: "demo.order", Input: json.RawMessage(`{}`)}
				switch i % 5 {
				case 0:
					p.IdempotencyKey = "same"
				case 1:
					p.IdempotencyKey, p.Input = "clash", json.RawMessage(fmt.Sprintf(`{"n": %d}`, i))
				case 2:
					p.ExternalID = "ext-1"
				case 3:
					p.Type = "no.such"
				}
				<-release
				results[i], errs[i] = engine.Start(ctx, p)
			})
		}
		close(release)
		wg.Wait()

		created := map[int]int{}
		ids := map[int]map[int64]bool{0: {}, 2: {}, 4: {}}
		for i := range callers {
			kind := i % 5
			switch kind {
			case 1:
				if errs[i] != nil {
					requireCode(t, errs[i], workflow.CodeConflict, "idempotencyKey")
					continue
				}
			case 3:
				requireCode(t, errs[i], workflow.CodeInvalidInput, "type")
				continue
			}
			require.NoError(t, errs[i], "caller %d", i)
			if results[i].Created {
				created[kind]++
			}
			if ids[kind] != nil {
				ids[kind][results[i].Workflow.ID] = true
			}
		}
		require.Equal(t, 1, created[0], "one idempotency key, one workflow created")
		require.Len(t, ids[0], 1, "its replays all answer with it")
		require.Equal(t, 1, created[1], "the key reused with other content: the first wins, the others are refused")
		require.Equal(t, 1, created[2], "one external ID, one workflow")
		require.Len(t, ids[2], 1)
		require.Equal(t, callers/5, created[4], "plain starts each create their own")
		require.Len(t, ids[4], callers/5)
		n, err := store.WorkflowCount(ctx, persistence.WorkflowFilter{})
		require.NoError(t, err)
		require.Equal(t, 3+callers/5, n, "nothing else was stored")
		if store.Kind() == persistence.KindPostgres {
			var txs int
			require.NoError(t, store.DB().NewRaw("SELECT count(DISTINCT xmin::text) FROM workflows").Scan(ctx, &txs))
			t.Logf("%d workflows written in %d transactions", n, txs)
			require.Less(t, txs, n, "200 callers at once share transactions")
		}
	})
}
