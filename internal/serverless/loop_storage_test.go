package serverless_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// An iteration of a for loop stores what it changes (the loop's position and item, the data its
// task set), not the collection again: a loop over an array of 200 items stores the array a
// fixed number of times, and each iteration a few hundred bytes, whatever the array's size (the
// array is 4 KB, so an iteration that stored it again would be over its bound eight times; 500
// items took a minute on SQLite under the race detector in CI). Each iteration used to store the
// whole loop state, the array included: bytes stored grew with items × array size.
func TestALoopIterationStoresWhatItChanges(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		n := newNode(t, store)
		def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: test, name: bigloop, version: '1.0.0'}
do:
  - each:
      for: {each: item, in: '${ .items }'}
      do:
        - note:
            set: {last: '${ $item.id }'}
  - done:
      set: {count: '${ .last + 1 }'}
`)
		const items = 200
		list := make([]map[string]any, items)
		for i := range list {
			list[i] = map[string]any{"id": i, "pad": "x"}
		}
		input, err := json.Marshal(map[string]any{"items": list})
		require.NoError(t, err)
		w := n.start(t, def.Type, string(input))
		n.startWorker(t)
		// Hundreds of steps, on a shared machine under the race detector: longer than waitEnded's
		// deadline may be needed.
		for deadline := time.Now().Add(5 * time.Minute); !w.Status.Terminal() && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			w, err = store.WorkflowGet(ctx, w.ID)
			require.NoError(t, err)
		}
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.Equal(t, map[string]any{"count": float64(items)}, output(t, w))

		actions, err := store.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: []int64{w.ID}, Page: persistence.PageParams{Limit: 10 * items}})
		require.NoError(t, err)
		ids := make([]int64, len(actions))
		for i, a := range actions {
			ids[i] = a.ID
		}
		vars, err := store.ActionVariableList(ctx, ids)
		require.NoError(t, err)
		total, perAction := 0, map[int64]int{}
		for _, v := range vars {
			total += len(v.Key) + len(v.Value)
			perAction[v.ActionID] += len(v.Key) + len(v.Value)
		}
		iterations := 0
		for _, a := range actions {
			if a.FromState != nil && *a.FromState == "/do/0/each/do/0/note" {
				iterations++
				require.LessOrEqual(t, perAction[a.ID], 512, "bytes stored by iteration %d's action", iterations)
			}
		}
		require.Equal(t, items, iterations)
		// The array is stored with the input, its data and the loop once each; the rest is the
		// iterations' own changes.
		bound := 4*len(input) + items*512
		require.LessOrEqual(t, total, bound, fmt.Sprintf("%d bytes of variable changes for %d iterations over %d bytes of input", total, items, len(input)))
		t.Logf("%s: %d bytes of variable changes in %d actions, %d bytes of input", store.Kind(), total, len(actions), len(input))
	})
}

// A workflow that was running in a loop when cairn was upgraded kept its frames in the earlier
// form (each frame's input and a loop's items inline in the frames variable): it goes on through
// its remaining items.
func TestALoopStoredInTheEarlierFormGoesOn(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		n := newNode(t, store)
		def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: test, name: upgraded, version: '1.0.0'}
do:
  - each:
      for: {each: item, in: '${ .items }'}
      do:
        - add:
            set: {sum: '${ (.sum // 0) + $item }'}
        - hold:
            listen: {to: {one: {with: {type: test.next}}}}
            output: {as: '${ $input }'}
`)
		w := n.start(t, def.Type, `{"items": [1, 2, 3]}`)
		stop := n.startWorker(t)
		atSum := func(sum float64) {
			n.waitFor(t, w.ID, fmt.Sprintf("waiting with sum %v", sum), func(w *persistence.Workflow) bool {
				var vars struct {
					Data struct {
						Sum float64 `json:"sum"`
					} `json:"data"`
				}
				return w.Status == persistence.StatusWaiting && w.State == "/do/0/each/do/1/hold" &&
					json.Unmarshal(w.Variables, &vars) == nil && vars.Data.Sum == sum
			})
		}
		atSum(1)
		stop()

		// The frames as the earlier form stored them, at the loop's first item.
		legacy := `{"frames": [{"path": "", "input": {"items": [1, 2, 3]}},
			{"path": "/do/0/each", "input": {"items": [1, 2, 3]}, "items": [1, 2, 3]}], "frame:/do/0/each": null}`
		_, err := n.engine.Update(ctx, workflow.UpdateParams{ChangeParams: workflow.ChangeParams{ID: w.ID, Reason: "test"}, Variables: json.RawMessage(legacy)})
		require.NoError(t, err)
		n.startWorker(t)
		for _, sum := range []float64{3, 6} {
			_, err := n.engine.Signal(ctx, workflow.SignalParams{ID: w.ID, Name: "test.next"})
			require.NoError(t, err)
			atSum(sum)
		}
		_, err = n.engine.Signal(ctx, workflow.SignalParams{ID: w.ID, Name: "test.next"})
		require.NoError(t, err)
		w = n.waitEnded(t, w.ID)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.Equal(t, map[string]any{"sum": float64(6)}, output(t, w))
	})
}
