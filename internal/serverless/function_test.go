package serverless_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

const functionDoc = `document: {dsl: '1.0.0', namespace: test, name: fn, version: '1.0.0'}
do:
  - price:
      call: quote
      with: {sku: '${ .sku }', qty: 3}
      output: {as: '${ {total: .total} }'}
  - guarded:
      try:
        - check:
            call: verify
      catch:
        errors: {with: {status: 422}}
        as: problem
        do:
          - note: {set: {total: '${ .total }', rejected: '${ $problem.title }'}}
`

// A call of a function the document does not define is served by a Go Function registered on the
// node, or, where none is, becomes a remote task: the workflow waits for a worker, which gets the
// call's arguments; the worker's output (or its failure, as a Problem a try can catch) goes on.
func TestFunctionCalls(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		n := newNodeWith(t, store, serverless.Options{Functions: map[string]serverless.Function{
			"verify": func(_ context.Context, args any) (any, error) {
				return nil, &serverless.ProblemError{Problem: serverless.Problem{Type: "https://example.com/rejected", Status: 422, Title: "Rejected"}}
			},
		}})
		n.startWorker(t)
		n.deploy(t, functionDoc)
		w := n.start(t, "test.fn", `{"sku": "a-1"}`)

		var task workflow.LeasedTask
		for task.RemoteTask == nil {
			got, err := n.engine.PollTasks(ctx, workflow.PollTasksParams{Functions: []string{"quote"}, WaitMs: ptr(2000), Worker: "py"})
			require.NoError(t, err)
			if len(got) == 1 {
				task = got[0]
			}
		}
		require.JSONEq(t, `{"sku": "a-1", "qty": 3}`, string(task.Input))
		require.Equal(t, "/do/0/price", task.State)
		_, err := n.engine.CompleteTask(ctx, task.Token, json.RawMessage(`{"total": 30, "currency": "EUR"}`), nil)
		require.NoError(t, err)

		done := n.waitEnded(t, w.ID)
		require.Equal(t, persistence.StatusFinished, done.Status, lastError(done))
		require.Equal(t, map[string]any{"total": float64(30), "rejected": "Rejected"}, output(t, done))
	})
}

// A worker's failure that no try catches faults the workflow with the worker's Problem.
func TestRemoteFunctionFailureFaults(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		n := newNode(t, store)
		n.startWorker(t)
		n.deploy(t, `document: {dsl: '1.0.0', namespace: test, name: fails, version: '1.0.0'}
do:
  - charge: {call: charge}
`)
		w := n.start(t, "test.fails", `{}`)
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			got, err := n.engine.PollTasks(ctx, workflow.PollTasksParams{Functions: []string{"charge"}, WaitMs: ptr(1000)})
			require.NoError(t, err)
			if len(got) == 1 {
				_, err := n.engine.FailTask(ctx, got[0].Token, workflow.TaskFailure{Type: "https://example.com/declined", Status: ptr(402), Title: "Declined"}, false, nil)
				require.NoError(t, err)
				break
			}
		}
		done := n.waitEnded(t, w.ID)
		require.Equal(t, persistence.StatusFailed, done.Status)
		p := serverless.ProblemOf(done)
		require.NotNil(t, p)
		require.Equal(t, "https://example.com/declined", p.Type)
		require.Equal(t, 402, p.Status)
		require.Equal(t, "/do/0/charge", p.Instance)
	})
}

func ptr[T any](v T) *T { return &v }
