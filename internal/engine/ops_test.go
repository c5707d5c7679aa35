package engine_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
	"github.com/cairnflow/cairn/workflow/demo"
)

func newEngine(t testing.TB, store *persistence.Store) *engine.Engine {
	t.Helper()
	engine := engine.New(store, engine.Options{})
	require.NoError(t, demo.Register(context.Background(), engine))
	return engine
}

func requireCode(t *testing.T, err error, code workflow.Code, field string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, workflow.CodeOf(err), "error: %v", err)
	if field != "" {
		var we *workflow.Error
		require.ErrorAs(t, err, &we)
		require.Equal(t, field, we.Field)
	}
}

func TestStartRules(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)

		_, err := engine.Start(ctx, workflow.StartParams{Type: "no.such"})
		requireCode(t, err, workflow.CodeInvalidInput, "type")
		_, err = engine.Start(ctx, workflow.StartParams{Type: "demo.order", Input: json.RawMessage(`[1,2]`)})
		requireCode(t, err, workflow.CodeInvalidInput, "input")
		_, err = engine.Start(ctx, workflow.StartParams{Type: "demo.order", Input: json.RawMessage(`"text"`)})
		requireCode(t, err, workflow.CodeInvalidInput, "input")

		first, err := engine.Start(ctx, workflow.StartParams{Type: "demo.order", ExternalID: "order-1", BusinessKey: "bk", Priority: 3})
		require.NoError(t, err)
		require.True(t, first.Created)
		w := first.Workflow
		require.Equal(t, persistence.StatusCreated, w.Status)
		require.Equal(t, "validate", w.State)
		require.Equal(t, 3, w.Priority)
		require.Equal(t, "default", w.ExecutorGroup)
		again, err := engine.Start(ctx, workflow.StartParams{Type: "demo.order", ExternalID: "order-1"})
		require.NoError(t, err)
		require.False(t, again.Created)
		require.Equal(t, w.ID, again.Workflow.ID)

		k1, err := engine.Start(ctx, workflow.StartParams{Type: "demo.order", IdempotencyKey: "key-1"})
		require.NoError(t, err)
		k2, err := engine.Start(ctx, workflow.StartParams{Type: "demo.order", IdempotencyKey: "key-1"})
		require.NoError(t, err)
		require.True(t, k1.Created)
		require.False(t, k2.Created)
		require.Equal(t, k1.Workflow.ID, k2.Workflow.ID)

		later := time.Now().Add(time.Hour)
		sched, err := engine.Start(ctx, workflow.StartParams{Type: "demo.order", StartAt: &later})
		require.NoError(t, err)
		require.WithinDuration(t, later, *sched.Workflow.NextActivation, time.Millisecond)

		_, err = engine.SetReleaseState(ctx, "demo.order", persistence.ReleaseOffline, "")
		require.NoError(t, err)
		_, err = engine.Start(ctx, workflow.StartParams{Type: "demo.order"})
		requireCode(t, err, workflow.CodeConflict, "")
		_, err = engine.SetReleaseState(ctx, "demo.order", persistence.ReleaseOnline, "ops-person")
		require.NoError(t, err)
		_, err = engine.SetReleaseState(ctx, "no.such", persistence.ReleaseOnline, "ops-person")
		requireCode(t, err, workflow.CodeNotFound, "type")
		// Each change is in the audit log, written with it; the refused one left nothing.
		entries, err := store.AuditList(ctx, persistence.AuditListParams{Limit: 10})
		require.NoError(t, err)
		require.Len(t, entries, 2)
		require.Equal(t, "ops-person", entries[0].Actor)
		require.Equal(t, "api", entries[1].Actor)
		for _, a := range entries {
			require.Equal(t, "setDefinitionReleaseState", a.Action)
			require.Equal(t, "demo.order", *a.Subject)
		}
		require.JSONEq(t, `{"releaseState":"ONLINE","version":1}`, string(entries[0].Details))

		// Events become readable once older transactions on the server (other tests') have ended.
		require.Eventually(t, func() bool {
			events, err := store.ChangeEventList(ctx, persistence.ChangeEventListParams{})
			require.NoError(t, err)
			return len(events) == 3
		}, 10*time.Second, 10*time.Millisecond, "one CREATED event per workflow created")
	})
}

func TestStartManyIsAllOrNothing(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		_, err := engine.StartMany(ctx, []workflow.StartParams{{Type: "demo.order"}, {Type: "nope"}})
		requireCode(t, err, workflow.CodeInvalidInput, "workflows[1].type")
		n, err := store.CountByWorkflow(ctx, "actions", nil)
		require.NoError(t, err)
		require.Empty(t, n)
		all, err := store.WorkflowGetMany(ctx, []int64{1, 2, 3})
		require.NoError(t, err)
		require.Empty(t, all, "a rejected batch starts nothing")

		ps := make([]workflow.StartParams, 0, 300)
		for range 299 {
			ps = append(ps, workflow.StartParams{Type: "bench.noop"})
		}
		ps = append(ps, workflow.StartParams{Type: "bench.noop", ExternalID: "dup"}, workflow.StartParams{Type: "bench.noop", ExternalID: "dup"})
		res, err := engine.StartMany(ctx, ps)
		require.NoError(t, err)
		require.Len(t, res, 301)
		require.Equal(t, res[299].Workflow.ID, res[300].Workflow.ID, "duplicates in one call share a workflow")
		require.False(t, res[300].Created)
	})
}

func TestConcurrentStartsWithOneExternalIDMakeOneWorkflow(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		var wg sync.WaitGroup
		ids := make([]int64, 8)
		created := make([]bool, 8)
		for i := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := engine.Start(ctx, workflow.StartParams{Type: "demo.order", ExternalID: "same"})
				require.NoError(t, err)
				ids[i], created[i] = res.Workflow.ID, res.Created
			}()
		}
		wg.Wait()
		n := 0
		for i := range ids {
			require.Equal(t, ids[0], ids[i])
			if created[i] {
				n++
			}
		}
		require.Equal(t, 1, n, "exactly one start created it")
	})
}

func TestOperationsFollowTheStatusRules(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		res, err := engine.Start(ctx, workflow.StartParams{Type: "demo.order"})
		require.NoError(t, err)
		id := res.Workflow.ID
		op := func(reason string) workflow.ChangeParams {
			return workflow.ChangeParams{ID: id, Reason: reason, Actor: "ops@example.com"}
		}

		_, err = engine.Resume(ctx, op("not paused"))
		requireCode(t, err, workflow.CodeConflict, "")
		_, err = engine.Retry(ctx, workflow.RetryParams{ChangeParams: op("not failed")})
		requireCode(t, err, workflow.CodeConflict, "")

		w, err := engine.Pause(ctx, op("maintenance"))
		require.NoError(t, err)
		require.Equal(t, persistence.StatusPaused, w.Status)
		_, err = engine.Pause(ctx, op("again"))
		requireCode(t, err, workflow.CodeConflict, "")
		w, err = engine.Resume(ctx, op("done"))
		require.NoError(t, err)
		require.Equal(t, persistence.StatusInProgress, w.Status)
		require.NotNil(t, w.NextActivation)

		w, err = engine.Update(ctx, workflow.UpdateParams{ChangeParams: op("fix"), StateText: ptr("looked at"), Variables: json.RawMessage(`{"note":"hi","gone":null}`)})
		require.NoError(t, err)
		require.Equal(t, "looked at", *w.StateText)
		require.JSONEq(t, `{"note":"hi"}`, string(w.Variables))
		_, err = engine.Update(ctx, workflow.UpdateParams{ChangeParams: op("bad"), State: ptr("nowhere")})
		requireCode(t, err, workflow.CodeInvalidInput, "state")
		_, err = engine.Update(ctx, workflow.UpdateParams{ChangeParams: op("bad"), Variables: json.RawMessage(`[1]`)})
		requireCode(t, err, workflow.CodeInvalidInput, "variables")
		_, err = engine.Update(ctx, workflow.UpdateParams{ChangeParams: op("nothing")})
		requireCode(t, err, workflow.CodeInvalidInput, "input")
		w, err = engine.Update(ctx, workflow.UpdateParams{ChangeParams: op("skip"), State: ptr("ship")})
		require.NoError(t, err)
		require.Equal(t, "ship", w.State)
		require.Equal(t, persistence.StatusInProgress, w.Status)

		w, err = engine.Cancel(ctx, op("customer asked"))
		require.NoError(t, err)
		require.Equal(t, persistence.StatusCancelled, w.Status)
		require.NotNil(t, w.Finished)
		for name, call := range map[string]func() error{
			"cancel": func() error { _, err := engine.Cancel(ctx, op("")); return err },
			"pause":  func() error { _, err := engine.Pause(ctx, op("")); return err },
			"signal": func() error {
				_, err := engine.Signal(ctx, workflow.SignalParams{ID: id, Name: "approve"})
				return err
			},
			"wake": func() error { _, err := engine.WakeUp(ctx, op("")); return err },
		} {
			requireCode(t, call(), workflow.CodeConflict, "")
			_ = name
		}
		before, err := store.WorkflowGet(ctx, id)
		require.NoError(t, err)
		require.Equal(t, w.Version, before.Version, "refused operations change nothing")

		actions, err := store.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: []int64{id}})
		require.NoError(t, err)
		require.Len(t, actions, 5, "pause, resume, update, update, cancel")
		for _, a := range actions {
			require.Equal(t, persistence.ActionExternalChange, a.Type)
			require.Equal(t, "ops@example.com", *a.Actor)
		}
		require.Equal(t, "cancel: customer asked", *actions[4].StateText)
		vars, err := store.ActionVariableList(ctx, []int64{actions[2].ID})
		require.NoError(t, err)
		require.Len(t, vars, 2, "the update's variable changes are recorded with its action")

		for _, call := range []func() error{
			func() error { _, err := engine.Pause(ctx, workflow.ChangeParams{ID: 987654}); return err },
			func() error { _, err := engine.Signal(ctx, workflow.SignalParams{ID: 987654, Name: "x"}); return err },
			func() error {
				_, err := engine.Retry(ctx, workflow.RetryParams{ChangeParams: workflow.ChangeParams{ID: 987654}})
				return err
			},
		} {
			requireCode(t, call(), workflow.CodeNotFound, "id")
		}
	})
}

func TestOperationIdempotencyKeys(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		res, err := engine.Start(ctx, workflow.StartParams{Type: "demo.approval"})
		require.NoError(t, err)
		id := res.Workflow.ID
		p := workflow.ChangeParams{ID: id, IdempotencyKey: "k"}
		_, err = engine.Pause(ctx, p)
		require.NoError(t, err)
		w, err := engine.Pause(ctx, p)
		require.NoError(t, err, "the same key returns the first result instead of a conflict")
		require.Equal(t, persistence.StatusPaused, w.Status)

		for range 2 {
			_, err = engine.Signal(ctx, workflow.SignalParams{ID: id, Name: "approve", IdempotencyKey: "s1"})
			require.NoError(t, err)
		}
		sigs, err := store.SignalList(ctx, []int64{id})
		require.NoError(t, err)
		require.Len(t, sigs, 1, "the same key delivers once")
		actions, err := store.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: []int64{id}})
		require.NoError(t, err)
		require.Len(t, actions, 1)
	})
}

func ptr[T any](v T) *T { return &v }

func TestInitialVariablesAreInTheHistory(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		res, err := engine.Start(ctx, workflow.StartParams{Type: "demo.order", Variables: json.RawMessage(`{"a":1,"b":"x"}`)})
		require.NoError(t, err)
		id := res.Workflow.ID
		w, err := engine.Update(ctx, workflow.UpdateParams{ChangeParams: workflow.ChangeParams{ID: id}, Variables: json.RawMessage(`{"a":2}`)})
		require.NoError(t, err)
		require.JSONEq(t, `{"a":2,"b":"x"}`, string(w.Variables))
		actions, err := store.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: []int64{id}})
		require.NoError(t, err)
		require.Len(t, actions, 1)
		asOf, err := store.VariablesAsOf(ctx, id, actions[0].ID)
		require.NoError(t, err)
		require.JSONEq(t, `2`, string(asOf["a"]))
		require.JSONEq(t, `"x"`, string(asOf["b"]), "the initial variables are part of the rebuilt history")
		atStart, err := store.VariablesAsOf(ctx, id, 0)
		require.NoError(t, err)
		require.JSONEq(t, `1`, string(atStart["a"]))
	})
}

// An operator who moves a workflow into a WAIT state whose signal already arrived finds it due at
// once, not waiting for a signal that will not come again.
func TestMovingIntoAWaitStateChecksWhatItWaitsFor(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		res, err := engine.Start(ctx, workflow.StartParams{Type: "demo.approval"})
		require.NoError(t, err)
		id := res.Workflow.ID
		_, err = engine.Signal(ctx, workflow.SignalParams{ID: id, Name: "approve"})
		require.NoError(t, err)
		w, err := engine.Update(ctx, workflow.UpdateParams{ChangeParams: workflow.ChangeParams{ID: id}, State: ptr("await")})
		require.NoError(t, err)
		require.Equal(t, persistence.StatusInProgress, w.Status, "the early signal releases it at once")
		require.Equal(t, "await", w.State)

		other, err := engine.Start(ctx, workflow.StartParams{Type: "demo.approval"})
		require.NoError(t, err)
		w, err = engine.Update(ctx, workflow.UpdateParams{ChangeParams: workflow.ChangeParams{ID: other.Workflow.ID}, State: ptr("await")})
		require.NoError(t, err)
		require.Equal(t, persistence.StatusWaiting, w.Status, "without a signal it waits")
	})
}
