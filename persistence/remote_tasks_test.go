package persistence_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// A lease takes the oldest pending tasks of its functions, at most its limit, oldest first, each
// with attempt + 1 and the lease's token; a batch of results is fenced result by result: a wrong
// token, an expired lease or a task already ended writes nothing, and the others are written.
func TestRemoteTaskLeaseAndEndMany(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		now := persistence.Now()
		var tasks []*persistence.RemoteTask
		for _, fn := range []string{"f", "g", "f", "f", "f"} {
			w := newWorkflow("t", persistence.StatusWaiting, nil)
			require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{w}))
			task := &persistence.RemoteTask{Function: fn, WorkflowID: w.ID, State: "s", ExecutorGroup: "default",
				Input: json.RawMessage(`{}`), MaxAttempts: 3}
			require.NoError(t, store.RemoteTaskCreate(ctx, task))
			tasks = append(tasks, task)
		}
		leased, err := store.RemoteTaskLease(ctx, persistence.RemoteTaskLeaseParams{Functions: []string{"f"}, Limit: 3, Token: "secret",
			Lease: time.Minute, Worker: "w1", Now: now})
		require.NoError(t, err)
		require.Len(t, leased, 3)
		for i, want := range []int64{tasks[0].ID, tasks[2].ID, tasks[3].ID} {
			l := leased[i]
			require.Equal(t, want, l.ID)
			require.Equal(t, persistence.RemoteTaskLeased, l.Status)
			require.Equal(t, 1, l.Attempt)
			require.Equal(t, "secret", *l.LeaseToken)
			require.Equal(t, "w1", *l.Worker)
			require.Equal(t, 60000, l.LeaseMs)
			require.WithinDuration(t, now.Add(time.Minute), *l.LeaseDeadline, time.Millisecond)
		}
		// The next lease gets what is left of f, never a task already leased.
		more, err := store.RemoteTaskLease(ctx, persistence.RemoteTaskLeaseParams{Functions: []string{"f", "h"}, Limit: 10, Token: "other",
			Lease: time.Second, Worker: "w2", Now: now})
		require.NoError(t, err)
		require.Len(t, more, 1)
		require.Equal(t, tasks[4].ID, more[0].ID)

		later := now.Add(2 * time.Second) // w2's one-second lease has run out
		ended, err := store.RemoteTaskEndMany(ctx, []persistence.RemoteTaskEndParams{
			{ID: tasks[0].ID, Token: "secret", Status: persistence.RemoteTaskSucceeded, Output: json.RawMessage(`{"a": 1}`)},
			{ID: tasks[2].ID, Token: "wrong", Status: persistence.RemoteTaskSucceeded, Output: json.RawMessage(`2`)},
			{ID: tasks[3].ID, Token: "secret", Status: persistence.RemoteTaskFailed, Error: json.RawMessage(`{"title": "no"}`), Retryable: true},
			{ID: tasks[4].ID, Token: "other", Status: persistence.RemoteTaskSucceeded, Output: json.RawMessage(`3`)},
			{ID: tasks[1].ID, Token: "secret", Status: persistence.RemoteTaskSucceeded, Output: json.RawMessage(`4`)},
		}, later)
		require.NoError(t, err)
		require.Len(t, ended, 5)
		require.NotNil(t, ended[0])
		require.Equal(t, persistence.RemoteTaskSucceeded, ended[0].Status)
		require.JSONEq(t, `{"a": 1}`, string(ended[0].Output))
		require.Nil(t, ended[0].LeaseToken)
		require.WithinDuration(t, later, *ended[0].Finished, time.Millisecond)
		require.Nil(t, ended[1], "a wrong token")
		require.NotNil(t, ended[2])
		require.Equal(t, persistence.RemoteTaskFailed, ended[2].Status)
		require.True(t, ended[2].Retryable)
		require.JSONEq(t, `{"title": "no"}`, string(ended[2].Error))
		require.Nil(t, ended[3], "an expired lease")
		require.Nil(t, ended[4], "a task never leased")

		// A result for a task that already ended writes nothing either.
		again, err := store.RemoteTaskEndMany(ctx, []persistence.RemoteTaskEndParams{
			{ID: tasks[0].ID, Token: "secret", Status: persistence.RemoteTaskSucceeded, Output: json.RawMessage(`5`)}}, later)
		require.NoError(t, err)
		require.Nil(t, again[0])
		for id, status := range map[int64]persistence.RemoteTaskStatus{tasks[0].ID: persistence.RemoteTaskSucceeded, tasks[1].ID: persistence.RemoteTaskPending,
			tasks[2].ID: persistence.RemoteTaskLeased, tasks[4].ID: persistence.RemoteTaskLeased} {
			got, err := store.RemoteTaskGet(ctx, id)
			require.NoError(t, err)
			require.Equal(t, status, got.Status, "task %d", id)
		}
		got, err := store.RemoteTaskGet(ctx, tasks[0].ID)
		require.NoError(t, err)
		require.JSONEq(t, `{"a": 1}`, string(got.Output))
	})
}
