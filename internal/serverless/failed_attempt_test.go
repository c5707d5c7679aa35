package serverless_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// choosing is a document whose path depends on its data's mode: "nul" sets a string that cannot
// be stored (a NUL character), "nulcontext" sets its data and exports such a string, "bad" raises in a loop, "late" skips to the end without a result
// (its output faults), anything else sets result.
const choosing = `
document: {dsl: '1.0.0', namespace: test, name: choosing, version: '1.0.0'}
do:
  - first:
      set: {mode: '${ .mode }', seen: true}
  - choose:
      timeout: {after: PT2S}
      switch:
        - nul: {when: '${ .mode == "nul" }', then: nul}
        - nulcontext: {when: '${ .mode == "nulcontext" }', then: nulcontext}
        - bad: {when: '${ .mode == "bad" }', then: loop}
        - late: {when: '${ .mode == "late" }', then: end}
        - good: {then: fine}
  - nul:
      set: {result: '${ "a" + ([0]|implode) + "b" }'}
      then: end
  - nulcontext:
      set: {result: partial}
      export: {as: '${ {note: ("a" + ([0]|implode) + "b")} }'}
      then: end
  - loop:
      for: {each: item, in: '${ [1, 2] }'}
      do:
        - explode:
            if: '${ .mode == "bad" }'
            raise: {error: {type: https://example.com/boom, status: 500, title: Boom}}
        - tally:
            set: {mode: '${ .mode }', total: '${ (.total // 0) + $item }'}
      then: end
  - fine:
      set: {result: ok}
output:
  as: '${ if .result == null and .total == null then error("no result") else {result: .result, total: .total, input: $workflow.input} end }'
`

func variablesOf(t *testing.T, w *persistence.Workflow) map[string]any {
	t.Helper()
	var vars map[string]any
	require.NoError(t, json.Unmarshal(w.Variables, &vars))
	return vars
}

// retryFrom retries an ended workflow from a task with new data, as an operator would
// (retryWorkflow(state:), then updateWorkflow(variables: {data:})), while no worker runs, then
// lets a worker run it to its end.
func (n *node) retryFrom(t *testing.T, id int64, state, data string) *persistence.Workflow {
	t.Helper()
	ctx := context.Background()
	_, err := n.engine.Retry(ctx, workflow.RetryParams{ChangeParams: workflow.ChangeParams{ID: id, Reason: "test"}, State: state})
	require.NoError(t, err)
	_, err = n.engine.Update(ctx, workflow.UpdateParams{ChangeParams: workflow.ChangeParams{ID: id, Reason: "test"},
		Variables: json.RawMessage(`{"data": ` + data + `}`)})
	require.NoError(t, err)
	stop := n.startWorker(t)
	defer stop()
	return n.waitEnded(t, id)
}

// noPanic asserts that nothing a workflow stored says a step panicked.
func noPanic(t *testing.T, store *persistence.Store, w *persistence.Workflow) {
	t.Helper()
	require.NotContains(t, lastError(w), "panic")
	tis, err := store.TaskInstanceList(context.Background(), persistence.TaskInstanceListParams{WorkflowIDs: []int64{w.ID}, Page: persistence.PageParams{Limit: 1000}})
	require.NoError(t, err)
	for _, ti := range tis {
		if ti.Error != nil {
			require.NotContains(t, *ti.Error, "panic", "task instance of %s", ti.State)
		}
	}
}

// A step whose data cannot be stored fails its attempts; what they wrote before the refusal is
// discarded, so each attempt starts from the data the step before left, none panics, and the
// workflow runs again from a task once its data is fixed. (A half-written attempt used to store
// what it wrote before the refusal: its frames, with its data refused, and the next attempt
// panicked; or its data, with its context refused, and the next attempt ran on its own output.)
func TestAFailedAttemptOfADocumentLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		def := n.deploy(t, choosing)
		var ids []int64
		for _, mode := range []string{"nul", "nul", "nulcontext", "nulcontext"} {
			ids = append(ids, n.start(t, def.Type, `{"mode": "`+mode+`"}`).ID)
		}
		stop := n.startWorker(t)
		var ended []*persistence.Workflow
		for _, id := range ids {
			ended = append(ended, n.waitEnded(t, id))
		}
		stop()
		for _, w := range ended {
			require.Equal(t, persistence.StatusFailed, w.Status, lastError(w))
			require.Contains(t, lastError(w), "NUL")
			noPanic(t, store, w)
			vars := variablesOf(t, w)
			var input map[string]any
			require.NoError(t, json.Unmarshal(w.Input, &input))
			require.Equal(t, map[string]any{"mode": input["mode"], "seen": true}, vars["data"], "the data the choose step left")
			require.Equal(t, map[string]any{}, vars["context"])
			require.Equal(t, []any{map[string]any{"path": ""}}, vars["frames"], "the frames the choose step left")
		}
		for _, w := range ended {
			w := n.retryFrom(t, w.ID, "/do/1/choose", `{"mode": "good"}`)
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			require.Equal(t, "ok", output(t, w).(map[string]any)["result"])
		}
	})
}

// A document that faulted runs again from any of its tasks: its frames are those of the task it
// is retried from, whatever task faulted (in a loop, or in the document's output when no frame
// is left).
func TestRetryFromAnyTaskOfAFailedDocument(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		def := n.deploy(t, choosing)
		inLoop := n.start(t, def.Type, `{"mode": "bad"}`)
		inOutput := n.start(t, def.Type, `{"mode": "late"}`)
		intoLoop := n.start(t, def.Type, `{"mode": "late"}`)
		stop := n.startWorker(t)
		for _, id := range []int64{inLoop.ID, inOutput.ID, intoLoop.ID} {
			w := n.waitEnded(t, id)
			require.Equal(t, persistence.StatusFailed, w.Status, lastError(w))
		}
		stop()

		// Out of the loop that faulted, to a task before it: the loop's frame is left.
		w := n.retryFrom(t, inLoop.ID, "/do/1/choose", `{"mode": "good"}`)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.Equal(t, map[string]any{"result": "ok", "total": nil, "input": map[string]any{"mode": "bad"}}, output(t, w))
		noPanic(t, store, w)

		// After the document's output faulted (no frame left), from a task of the document.
		w = n.retryFrom(t, inOutput.ID, "/do/1/choose", `{"mode": "good"}`)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.Equal(t, map[string]any{"result": "ok", "total": nil, "input": map[string]any{"mode": "late"}}, output(t, w))
		noPanic(t, store, w)

		// Into a loop's body: the loop is entered afresh at its first item, and the deadline of
		// the task that ran last (choose's, passed by now) is not the retried task's.
		time.Sleep(2100 * time.Millisecond)
		w = n.retryFrom(t, intoLoop.ID, "/do/4/loop/do/1/tally", `{"mode": "fixed"}`)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.Equal(t, map[string]any{"result": nil, "total": float64(3), "input": map[string]any{"mode": "late"}}, output(t, w))
		noPanic(t, store, w)
		for key := range variablesOf(t, w) {
			require.False(t, strings.HasPrefix(key, "frame:/"), "the loop's stored part %s is removed when it ends", key)
		}
	})
}
