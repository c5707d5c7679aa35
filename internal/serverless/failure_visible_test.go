package serverless_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// attemptsOf lists a workflow's task instances and actions in the order they ran.
func attemptsOf(t *testing.T, store *persistence.Store, id int64) ([]*persistence.TaskInstance, []*persistence.Action) {
	t.Helper()
	ctx := context.Background()
	tis, err := store.TaskInstanceList(ctx, persistence.TaskInstanceListParams{WorkflowIDs: []int64{id}, Page: persistence.PageParams{Limit: 1000}})
	require.NoError(t, err)
	as, err := store.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: []int64{id}})
	require.NoError(t, err)
	return tis, as
}

func problemIn(t *testing.T, text *string) serverless.Problem {
	t.Helper()
	require.NotNil(t, text)
	var p serverless.Problem
	require.NoError(t, json.Unmarshal([]byte(*text), &p), *text)
	return p
}

// A try that retries a failing task and then catches its fault leaves each failed attempt a
// FAILED task instance with the Problem, and a STATE_EXECUTION_FAILED action whose text is the
// Problem's title and detail; the tasks that succeeded are SUCCEEDED, and the workflow finishes with no
// lastError. (Every attempt used to be SUCCEEDED with no error: the Problem was only in the
// variables' frames.)
func TestACaughtFailureLeavesItsAttemptsFailed(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: test, name: caught, version: '1.0.0'}
do:
  - attempt:
      try:
        - flaky:
            raise:
              error: {type: https://example.com/errors/flaky, status: 503, title: Service Unavailable, detail: try later}
      catch:
        errors: {with: {type: https://example.com/errors/flaky}}
        retry:
          delay: {milliseconds: 10}
          limit: {attempt: {count: 2}}
        do:
          - recover:
              set: {recovered: true}
`)
		n.startWorker(t)
		w := n.start(t, def.Type, `{}`)
		w = n.waitEnded(t, w.ID)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.Equal(t, map[string]any{"recovered": true}, output(t, w))
		require.Nil(t, w.LastError)

		tis, actions := attemptsOf(t, store, w.ID)
		var failed, succeeded []string
		for _, ti := range tis {
			switch ti.Status {
			case persistence.TaskFailed:
				failed = append(failed, ti.State)
				p := problemIn(t, ti.Error)
				require.Equal(t, "https://example.com/errors/flaky", p.Type)
				require.Equal(t, "Service Unavailable", p.Title)
				require.Equal(t, "/do/0/attempt/try/0/flaky", p.Instance)
			case persistence.TaskSucceeded:
				succeeded = append(succeeded, ti.State)
				require.Nil(t, ti.Error)
			default:
				t.Fatalf("task instance of %s is %s", ti.State, ti.Status)
			}
		}
		flaky := "/do/0/attempt/try/0/flaky"
		require.Equal(t, []string{flaky, flaky, flaky}, failed, "the first attempt and both retries")
		require.Equal(t, []string{"start", "/do/0/attempt/catch/do/0/recover"}, succeeded)
		var texts []string
		for _, a := range actions {
			if a.FromState != nil && *a.FromState == flaky {
				require.Equal(t, persistence.ActionStateExecutionFailed, a.Type)
				require.NotNil(t, a.StateText)
				texts = append(texts, *a.StateText)
			}
		}
		require.Equal(t, []string{"Service Unavailable: try later; retrying after 10ms", "Service Unavailable: try later; retrying after 10ms",
			"Service Unavailable: try later"}, texts)
	})
}

// A document that faults ends FAILED with its failing task's attempt FAILED with the Problem, the
// Problem (JSON) as lastError and its title and detail as the state text. (The attempt used to be SUCCEEDED
// and the state text the Problem's JSON.)
func TestAFaultLeavesItsTaskFailed(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: test, name: faulting, version: '1.0.0'}
do:
  - prepare:
      set: {ready: true}
  - refuse:
      raise:
        error: {type: https://example.com/errors/refused, status: 422, title: Order Refused, detail: '${ "ready=" + (.ready|tostring) }'}
`)
		n.startWorker(t)
		w := n.start(t, def.Type, `{}`)
		w = n.waitEnded(t, w.ID)
		require.Equal(t, persistence.StatusFailed, w.Status, lastError(w))
		p := problemIn(t, w.LastError)
		require.Equal(t, serverless.Problem{Type: "https://example.com/errors/refused", Status: 422, Title: "Order Refused",
			Detail: "ready=true", Instance: "/do/1/refuse"}, p)
		require.NotNil(t, w.StateText)
		require.Equal(t, "Order Refused: ready=true", *w.StateText)

		tis, actions := attemptsOf(t, store, w.ID)
		last := tis[len(tis)-1]
		require.Equal(t, "/do/1/refuse", last.State)
		require.Equal(t, persistence.TaskFailed, last.Status)
		require.Equal(t, p, problemIn(t, last.Error))
		for _, ti := range tis[:len(tis)-1] {
			require.Equal(t, persistence.TaskSucceeded, ti.Status, ti.State)
		}
		fault := actions[len(actions)-1]
		require.Equal(t, "/do/1/refuse", *fault.FromState)
		require.Equal(t, "Order Refused: ready=true", *fault.StateText)
	})
}
