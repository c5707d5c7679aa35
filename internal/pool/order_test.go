package pool_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

func TestOrderRunsToFinished(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		b.startWorker(t, fastOptions())
		w := b.start(t, "demo.order", `{"amount": 12.5}`)
		done := b.waitStatus(t, w.ID, persistence.StatusFinished)
		require.Equal(t, "done", done.State)
		require.NotNil(t, done.Finished)
		require.Nil(t, done.ExecutorID)

		actions := b.actions(t, w.ID)
		require.Len(t, actions, 3)
		for i, want := range [][2]string{{"validate", "charge"}, {"charge", "ship"}, {"ship", "done"}} {
			require.Equal(t, persistence.ActionStateExecution, actions[i].Type)
			require.Equal(t, want[0], *actions[i].FromState)
			require.Equal(t, want[1], actions[i].State)
			require.NotNil(t, actions[i].TaskInstanceID)
		}
		tasks := b.tasks(t, w.ID)
		require.Len(t, tasks, 3)
		for _, ti := range tasks {
			require.Equal(t, persistence.TaskSucceeded, ti.Status)
			require.Equal(t, 1, ti.Attempt)
		}

		v := vars(t, done)
		se, err := store.SideEffectGet(context.Background(), w.ID, "chargeId")
		require.NoError(t, err)
		require.JSONEq(t, string(se.Value), `"`+v["chargeId"].(string)+`"`)
		require.Equal(t, true, v["shipped"])

		// The variables as of the charge action hold chargeId but not yet shipped.
		asOf, err := store.VariablesAsOf(context.Background(), w.ID, actions[1].ID)
		require.NoError(t, err)
		require.Contains(t, asOf, "chargeId")
		require.NotContains(t, asOf, "shipped")

		logs, err := store.ActivityLogList(context.Background(), persistence.ActivityLogListParams{WorkflowIDs: []int64{w.ID}})
		require.NoError(t, err)
		require.Len(t, logs, 1)
		require.Equal(t, "charged", logs[0].Name)
		require.Equal(t, tasks[1].ID, *logs[0].TaskInstanceID)
	})
}

func TestFailedFirstChargeRetriesWithTheSameSideEffect(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		b.startWorker(t, fastOptions())
		w := b.start(t, "demo.order", `{"failFirstCharge": true}`)
		done := b.waitStatus(t, w.ID, persistence.StatusFinished)

		actions := b.actions(t, w.ID)
		require.Len(t, actions, 4)
		failed := actions[1]
		require.Equal(t, persistence.ActionStateExecutionFailed, failed.Type)
		require.Equal(t, "charge", failed.State)
		require.Contains(t, *failed.StateText, "payment gateway timed out")
		require.Equal(t, persistence.ActionStateExecution, actions[2].Type)
		require.Equal(t, 1, actions[2].RetryNo)

		tasks := b.tasks(t, w.ID)
		require.Len(t, tasks, 4)
		require.Equal(t, persistence.TaskFailed, tasks[1].Status)
		require.Equal(t, 2, tasks[2].Attempt)

		ses, err := store.SideEffectList(context.Background(), []int64{w.ID})
		require.NoError(t, err)
		require.Len(t, ses, 1, "the side effect is recorded once across the retry")
		require.JSONEq(t, string(ses[0].Value), `"`+vars(t, done)["chargeId"].(string)+`"`)
		require.Zero(t, done.Retries)
	})
}

// A step that fails after recording a side effect gets the recorded value back when it runs again,
// and the side effect's function is not called again: the store keeping the first value is not
// enough, since a function called twice (a second charge) is the harm SideEffect exists to avoid.
func TestRetriedStepReplaysItsSideEffectWithoutCallingItAgain(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		var mu sync.Mutex
		calls := 0
		var seen []string // the value each attempt got
		def := workflow.Definition{Type: "t.charge", States: []workflow.State{
			{Name: "charge", Kind: workflow.Start, Next: []string{"done"}, Retry: quickRetry, Handler: func(c workflow.StepContext) (workflow.Next, error) {
				id, err := workflow.SideEffect(c, "chargeId", func() (string, error) {
					mu.Lock()
					defer mu.Unlock()
					calls++
					return fmt.Sprintf("ch_%d", calls), nil
				})
				if err != nil {
					return workflow.Next{}, err
				}
				mu.Lock()
				seen = append(seen, id)
				mu.Unlock()
				if c.Attempt() == 1 {
					return workflow.Next{}, errors.New("gateway timed out after charging")
				}
				return workflow.MoveTo("done"), nil
			}},
			{Name: "done", Kind: workflow.End}}}
		b := setup(t, store, def)
		b.startWorker(t, steadyOptions())
		w := b.start(t, "t.charge", `{}`)
		b.waitStatus(t, w.ID, persistence.StatusFinished)

		mu.Lock()
		defer mu.Unlock()
		// Two attempts at least (an attempt run again after its node looked dead on a loaded
		// machine is one more), every one given the first call's value.
		require.GreaterOrEqual(t, len(seen), 2, "the failed attempt and its retry ran")
		for _, v := range seen {
			require.Equal(t, "ch_1", v, "every attempt got the first call's value: %v", seen)
		}
		require.Equal(t, 1, calls, "the retry replayed the side effect instead of calling its function")
	})
}
