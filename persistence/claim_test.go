package persistence_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// A claim skips workflows still held by an attempt, a stopped executor claims nothing, step
// deadlines follow the states' own timeouts, and a release lets go only of its executor's claim.
func TestClaimHeldStoppedDeadlinesAndRelease(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		now := persistence.Now()
		past := now.Add(-time.Minute)
		exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Minute})
		require.NoError(t, err)
		other, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 2, Group: "default", Expiry: time.Minute})
		require.NoError(t, err)

		held := newWorkflow("t", persistence.StatusInProgress, &past) // resumed while its old attempt runs
		held.ExecutorID = &other.ID
		long := newWorkflow("t", persistence.StatusCreated, &past)
		long.State = "long"
		short := newWorkflow("t", persistence.StatusCreated, &past)
		short.State = "short"
		plain := newWorkflow("t", persistence.StatusCreated, &past)
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{held, long, short, plain}))

		stopped, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 3, Group: "default", Expiry: time.Minute})
		require.NoError(t, err)
		require.NoError(t, store.ExecutorStop(ctx, stopped.ID))
		none, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: stopped.ID, Group: "default", Limit: 10, Now: now,
			StepDeadline: now.Add(time.Minute), Types: []string{"t"}})
		require.NoError(t, err)
		require.Empty(t, none, "a stopped executor claims nothing")

		claimed, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: 10, Now: now,
			StepDeadline: now.Add(time.Minute), Types: []string{"t"}, StepTimeouts: []persistence.StepTimeout{
				{Type: "t", Version: 1, State: "long", Timeout: 5 * time.Minute},
				{Type: "t", Version: 1, State: "short", Timeout: 3 * time.Second},
				{Type: "t", Version: 2, State: "start", Timeout: time.Hour}, // another version: not these
			}})
		require.NoError(t, err)
		require.Len(t, claimed, 3, "the held workflow is not claimed")
		for _, w := range claimed {
			require.NotEqual(t, held.ID, w.ID)
			want := map[string]time.Duration{"long": 5 * time.Minute, "short": 3 * time.Second, "start": time.Minute}[w.State]
			require.NotNil(t, w.StepDeadline)
			require.WithinDuration(t, now.Add(want), *w.StepDeadline, time.Millisecond, "state %s", w.State)
			stored, err := store.WorkflowGet(ctx, w.ID)
			require.NoError(t, err)
			require.Equal(t, stored, w, "a claim returns the row as it stored it")
		}

		// The held workflow's attempt ends: only its own executor's release lets go of it.
		got, err := store.WorkflowRelease(ctx, persistence.WorkflowReleaseParams{ExecutorID: exec.ID, IDs: []int64{held.ID}})
		require.NoError(t, err)
		require.Empty(t, got)
		got, err = store.WorkflowRelease(ctx, persistence.WorkflowReleaseParams{ExecutorID: other.ID, IDs: []int64{held.ID}})
		require.NoError(t, err)
		require.Equal(t, []int64{held.ID}, got)
		w, err := store.WorkflowGet(ctx, held.ID)
		require.NoError(t, err)
		require.Nil(t, w.ExecutorID)
		require.Equal(t, persistence.StatusInProgress, w.Status, "a release keeps the status an operator left")
		again, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: 10, Now: now,
			StepDeadline: now.Add(time.Minute), Types: []string{"t"}})
		require.NoError(t, err)
		require.Len(t, again, 1)
		require.Equal(t, held.ID, again[0].ID)
	})
}

// A cancelled or paused workflow is never claimed, even when everything else about it says due:
// its next activation has passed, nobody holds it, it is of a claimed type and group. Cancelling a
// workflow whose step still runs leaves such a row behind once that step lets go.
func TestClaimSkipsCancelledAndPausedWorkflows(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		now := persistence.Now()
		past := now.Add(-time.Minute)
		exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Minute})
		require.NoError(t, err)
		// The cancelled and paused rows come first in the claim's order (higher priority, earlier
		// due), so a claim that let them through would take them before the due one.
		cancelled := newWorkflow("t", persistence.StatusCancelled, &past)
		cancelled.Priority = 10
		paused := newWorkflow("t", persistence.StatusPaused, &past)
		paused.Priority = 10
		due := newWorkflow("t", persistence.StatusInProgress, &now)
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{cancelled, paused, due}))

		claimed, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: 10, Now: now,
			StepDeadline: now.Add(time.Minute), Types: []string{"t"}})
		require.NoError(t, err)
		require.Len(t, claimed, 1, "only the due workflow is claimed")
		require.Equal(t, due.ID, claimed[0].ID)
		for _, w := range []*persistence.Workflow{cancelled, paused} {
			stored, err := store.WorkflowGet(ctx, w.ID)
			require.NoError(t, err)
			require.Equal(t, w.Status, stored.Status, "a claim leaves a %s workflow as it was", w.Status)
			require.Nil(t, stored.ExecutorID, "a %s workflow is held by nobody", w.Status)
		}
	})
}

// The completion fence checks who holds a workflow as well as at which version: a completion from
// an executor that does not hold it writes nothing even when it names the version the row is at.
// Every writer today bumps the version when the holder changes, so the version alone usually
// tells them apart; this row, held by one executor at the version another one names, is the
// case where only the executor term stands between a late or misdirected result and the row.
func TestCompletionFromAnExecutorNotHoldingTheWorkflowWritesNothing(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		now := persistence.Now()
		holder, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Minute})
		require.NoError(t, err)
		stranger, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 2, Group: "default", Expiry: time.Minute})
		require.NoError(t, err)
		w := newWorkflow("t", persistence.StatusExecuting, &now)
		w.ExecutorID = &holder.ID
		w.Version = 3
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{w}))

		done, err := store.WorkflowCompleteMany(ctx, []persistence.WorkflowCompletion{{ID: w.ID, ExecutorID: stranger.ID, ClaimedVersion: 3,
			Status: persistence.StatusFinished, State: "end", Variables: []byte(`{"by":"stranger"}`), Finished: ptr(now)}})
		require.NoError(t, err)
		require.Empty(t, done, "an executor that does not hold the workflow writes nothing")
		got, err := store.WorkflowGet(ctx, w.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusExecuting, got.Status)
		require.Equal(t, "start", got.State)
		require.Equal(t, &holder.ID, got.ExecutorID)
		require.Equal(t, 3, got.Version)

		done, err = store.WorkflowCompleteMany(ctx, []persistence.WorkflowCompletion{{ID: w.ID, ExecutorID: holder.ID, ClaimedVersion: 3,
			Status: persistence.StatusFinished, State: "end", Variables: []byte(`{"by":"holder"}`), Finished: ptr(now)}})
		require.NoError(t, err)
		require.Equal(t, []int64{w.ID}, done, "the holder's completion is written")
		got, err = store.WorkflowGet(ctx, w.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusFinished, got.Status)
		require.JSONEq(t, `{"by":"holder"}`, string(got.Variables))
	})
}
