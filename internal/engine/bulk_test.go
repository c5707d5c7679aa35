package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// startMany starts n demo.order workflows with a business key (no worker runs them) and returns
// their IDs.
func startMany(t *testing.T, e *engine.Engine, n int, key string) []int64 {
	t.Helper()
	ps := make([]workflow.StartParams, n)
	for i := range ps {
		ps[i] = workflow.StartParams{Type: "demo.order", BusinessKey: key}
	}
	res, err := e.StartMany(context.Background(), ps)
	require.NoError(t, err)
	ids := make([]int64, n)
	for i, r := range res {
		ids[i] = r.Workflow.ID
	}
	return ids
}

// bulkSetup is what every bulk test starts from: an engine on store with n demo.order workflows of
// one business key, and the filter that matches them.
type bulkSetup struct {
	e      *engine.Engine
	ids    []int64
	filter persistence.WorkflowFilter
}

func newBulkSetup(t *testing.T, store *persistence.Store, key string, n int) bulkSetup {
	t.Helper()
	e := newEngine(t, store)
	return bulkSetup{e: e, ids: startMany(t, e, n, key), filter: persistence.WorkflowFilter{BusinessKey: &key}}
}

// runBulkToEnd runs a runner until the operation has ended (60 s at most) and returns it.
func runBulkToEnd(t *testing.T, e *engine.Engine, id int64, o engine.BulkRunOptions) *persistence.BulkOperation {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(90 * time.Second)
	for {
		_, err := e.RunBulk(ctx, o)
		require.NoError(t, err)
		op, err := e.BulkOperation(ctx, id)
		require.NoError(t, err)
		if op.Status.Ended() {
			return op
		}
		require.True(t, time.Now().Before(deadline), "bulk operation %d did not end: %+v", id, op)
		time.Sleep(5 * time.Millisecond) // another runner's lease has yet to run out
	}
}

func TestBulkCancelSnapshotsAndSurvivesAKilledRunner(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		b := newBulkSetup(t, store, "bulk-cancel", 27)
		e, ids, filter := b.e, b.ids, b.filter
		for _, id := range ids[:2] {
			_, err := e.Cancel(ctx, workflow.ChangeParams{ID: id})
			require.NoError(t, err)
		}

		dry, err := e.StartBulk(ctx, workflow.BulkParams{Action: workflow.BulkCancel, Filter: filter, DryRun: true})
		require.NoError(t, err)
		require.Equal(t, persistence.BulkSucceeded, dry.Status)
		require.True(t, dry.DryRun)
		require.EqualValues(t, 27, dry.Total)
		require.EqualValues(t, 25, dry.WouldChange)
		require.Zero(t, dry.Processed)
		created := persistence.StatusCreated
		n, err := store.WorkflowCount(ctx, persistence.WorkflowFilter{BusinessKey: filter.BusinessKey, Statuses: []persistence.Status{created}})
		require.NoError(t, err)
		require.Equal(t, 25, n, "a dry run changes nothing")

		op, err := e.StartBulk(ctx, workflow.BulkParams{Action: workflow.BulkCancel, Filter: filter, Reason: "wrong prices", Actor: "ops-person"})
		require.NoError(t, err)
		require.Equal(t, persistence.BulkPending, op.Status)
		require.EqualValues(t, 27, op.Total)
		later := startMany(t, e, 3, *filter.BusinessKey) // match the filter only after the start

		// A runner does one batch and dies: its lease runs out and another runner carries on.
		done, err := e.RunBulk(ctx, engine.BulkRunOptions{Owner: "killed", Lease: time.Millisecond, Batch: 10, MaxBatches: 1})
		require.NoError(t, err)
		require.Equal(t, 10, done)
		mid, err := e.BulkOperation(ctx, op.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.BulkRunning, mid.Status)
		require.EqualValues(t, 10, mid.Processed)

		op = runBulkToEnd(t, e, op.ID, engine.BulkRunOptions{Owner: "survivor", Batch: 7})
		require.Equal(t, persistence.BulkSucceeded, op.Status)
		require.EqualValues(t, 27, op.Processed)
		require.EqualValues(t, 25, op.Succeeded)
		require.EqualValues(t, 2, op.Failed)
		require.NotNil(t, op.Finished)
		require.Equal(t, "ops-person", op.Actor)

		failures, err := store.BulkFailurePage(ctx, op.ID, 0, 10)
		require.NoError(t, err)
		require.Len(t, failures, 2)
		for i, f := range failures {
			require.Equal(t, ids[i], f.WorkflowID)
			require.Contains(t, *f.Error, "CONFLICT")
			require.Contains(t, *f.Error, "already CANCELLED")
		}
		for _, id := range ids[2:] {
			w, err := store.WorkflowGet(ctx, id)
			require.NoError(t, err)
			require.Equal(t, persistence.StatusCancelled, w.Status)
			actions, err := store.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: []int64{id}})
			require.NoError(t, err)
			require.Len(t, actions, 1, "changed once")
			require.Equal(t, "ops-person", *actions[0].Actor)
			require.Contains(t, *actions[0].StateText, "wrong prices")
		}
		for _, id := range later {
			w, err := store.WorkflowGet(ctx, id)
			require.NoError(t, err)
			require.Equal(t, persistence.StatusCreated, w.Status, "not in the snapshot")
		}
		again, err := e.RunBulk(ctx, engine.BulkRunOptions{Owner: "another"})
		require.NoError(t, err)
		require.Zero(t, again)
	})
}

func TestBulkActions(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		b := newBulkSetup(t, store, "bulk-actions", 5)
		e, ids, filter := b.e, b.ids, b.filter
		run := func(p workflow.BulkParams) *persistence.BulkOperation {
			t.Helper()
			p.Filter = filter
			op, err := e.StartBulk(ctx, p)
			require.NoError(t, err)
			return runBulkToEnd(t, e, op.ID, engine.BulkRunOptions{Owner: "runner", Batch: 2})
		}
		statuses := func() map[persistence.Status]int {
			out := map[persistence.Status]int{}
			for _, id := range ids {
				w, err := store.WorkflowGet(ctx, id)
				require.NoError(t, err)
				out[w.Status]++
			}
			return out
		}

		op := run(workflow.BulkParams{Action: workflow.BulkPause})
		require.EqualValues(t, 5, op.Succeeded)
		require.Equal(t, map[persistence.Status]int{persistence.StatusPaused: 5}, statuses())
		op = run(workflow.BulkParams{Action: workflow.BulkResume})
		require.EqualValues(t, 5, op.Succeeded)
		require.Equal(t, map[persistence.Status]int{persistence.StatusInProgress: 5}, statuses())
		op = run(workflow.BulkParams{Action: workflow.BulkSignal, SignalName: "poke", SignalPayload: json.RawMessage(`{"n":1}`)})
		require.EqualValues(t, 5, op.Succeeded)
		signals, err := store.SignalList(ctx, ids)
		require.NoError(t, err)
		require.Len(t, signals, 5)
		op = run(workflow.BulkParams{Action: workflow.BulkDelete})
		require.Equal(t, persistence.BulkFailed, op.Status, "nothing ended: nothing to delete")
		require.EqualValues(t, 5, op.Failed)
		op = run(workflow.BulkParams{Action: workflow.BulkCancel})
		require.EqualValues(t, 5, op.Succeeded)
		op = run(workflow.BulkParams{Action: workflow.BulkDelete})
		require.EqualValues(t, 5, op.Succeeded)
		n, err := store.WorkflowCount(ctx, filter)
		require.NoError(t, err)
		require.Zero(t, n)
		op = run(workflow.BulkParams{Action: workflow.BulkCancel})
		require.Equal(t, persistence.BulkSucceeded, op.Status, "an empty snapshot ends at once")
		require.Zero(t, op.Total)
	})
}

func TestBulkRefusesAndCancels(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		b := newBulkSetup(t, store, "bulk-refused", 3)
		e, ids, filter := b.e, b.ids, b.filter
		for _, c := range []struct {
			p     workflow.BulkParams
			field string
		}{
			{workflow.BulkParams{Action: "TERMINATE", Filter: filter}, "action"},
			{workflow.BulkParams{Action: workflow.BulkCancel}, "filter"},
			{workflow.BulkParams{Action: workflow.BulkSignal, Filter: filter}, "signal.name"},
			{workflow.BulkParams{Action: workflow.BulkCancel, Filter: filter, State: "validate"}, "state"},
			{workflow.BulkParams{Action: workflow.BulkCancel, Filter: filter, SignalName: "x"}, "signal"},
			{workflow.BulkParams{Action: workflow.BulkCancel, Filter: filter, Reason: strings.Repeat("x", 5000)}, "reason"},
		} {
			_, err := e.StartBulk(ctx, c.p)
			requireCode(t, err, workflow.CodeInvalidInput, c.field)
		}
		page, err := store.BulkOperationPage(ctx, 0, 10)
		require.NoError(t, err)
		require.Empty(t, page, "a refused operation stores nothing")

		op, err := e.StartBulk(ctx, workflow.BulkParams{Action: workflow.BulkCancel, Filter: filter})
		require.NoError(t, err)
		cancelled, err := e.CancelBulk(ctx, op.ID, "")
		require.NoError(t, err)
		require.Equal(t, persistence.BulkCancelled, cancelled.Status)
		_, err = e.CancelBulk(ctx, op.ID, "")
		requireCode(t, err, workflow.CodeConflict, "")
		_, err = e.CancelBulk(ctx, op.ID+1000, "")
		requireCode(t, err, workflow.CodeNotFound, "id")
		n, err := e.RunBulk(ctx, engine.BulkRunOptions{Owner: "runner"})
		require.NoError(t, err)
		require.Zero(t, n)
		for _, id := range ids {
			w, err := store.WorkflowGet(ctx, id)
			require.NoError(t, err)
			require.Equal(t, persistence.StatusCreated, w.Status)
		}

		// All, said explicitly, is every workflow.
		all, err := e.StartBulk(ctx, workflow.BulkParams{Action: workflow.BulkPause, All: true})
		require.NoError(t, err)
		require.EqualValues(t, 3, all.Total)
	})
}
