package persistence_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

func ptr[T any](v T) *T { return &v }

func newWorkflow(typ string, status persistence.Status, due *time.Time) *persistence.Workflow {
	return &persistence.Workflow{Type: typ, DefinitionVersion: 1, Status: status, State: "start",
		ExecutorGroup: "default", NextActivation: due}
}

func TestMigrateIsIdempotentAndReportsStatus(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		applied, err := store.Migrate(ctx)
		require.NoError(t, err)
		require.Empty(t, applied, "a second migrate applies nothing")
		statuses, err := store.MigrationStatuses(ctx)
		require.NoError(t, err)
		require.NotEmpty(t, statuses)
		for _, st := range statuses {
			require.True(t, st.Applied, st.Name)
		}
		require.NoError(t, store.CheckSchema(ctx))

		_, err = store.DB().ExecContext(ctx, "INSERT INTO cairn_migrations (name, group_id, migrated_at) VALUES ('29991231000000_future', 99, ?)", persistence.Now())
		require.NoError(t, err)
		_, err = store.Migrate(ctx)
		require.ErrorIs(t, err, persistence.ErrSchemaTooNew)
		require.ErrorIs(t, store.CheckSchema(ctx), persistence.ErrSchemaTooNew)
	})
}

func TestRollbackThenMigrate(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		undone, err := store.Rollback(ctx)
		require.NoError(t, err)
		require.NotEmpty(t, undone)
		require.ErrorIs(t, store.CheckSchema(ctx), persistence.ErrNotMigrated)
		applied, err := store.Migrate(ctx)
		require.NoError(t, err)
		require.Equal(t, undone, applied)
		require.NoError(t, store.CheckSchema(ctx))
	})
}

func TestDefinitionVersions(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		spec := json.RawMessage(`{"states":[]}`)
		d1, created, err := store.DefinitionSave(ctx, persistence.DefinitionSaveParams{Type: "a", Checksum: "c1", Spec: spec, ExecutorGroup: "default"})
		require.NoError(t, err)
		require.True(t, created)
		require.Equal(t, 1, d1.Version)

		again, created, err := store.DefinitionSave(ctx, persistence.DefinitionSaveParams{Type: "a", Checksum: "c1", Spec: spec, ExecutorGroup: "default"})
		require.NoError(t, err)
		require.False(t, created, "same checksum is the same version")
		require.Equal(t, d1.ID, again.ID)

		d2, created, err := store.DefinitionSave(ctx, persistence.DefinitionSaveParams{Type: "a", Checksum: "c2", Spec: spec, ExecutorGroup: "default"})
		require.NoError(t, err)
		require.True(t, created)
		require.Equal(t, 2, d2.Version)

		latest, err := store.DefinitionGet(ctx, persistence.DefinitionGetParams{Type: "a"})
		require.NoError(t, err)
		require.Equal(t, 2, latest.Version)
		v1, err := store.DefinitionGet(ctx, persistence.DefinitionGetParams{Type: "a", Version: 1})
		require.NoError(t, err)
		require.Equal(t, "c1", v1.Checksum)
		require.JSONEq(t, `{"states":[]}`, string(v1.Spec))

		_, err = store.DefinitionGet(ctx, persistence.DefinitionGetParams{Type: "missing"})
		require.ErrorIs(t, err, persistence.ErrNotFound)

		newest, err := store.DefinitionList(ctx, persistence.DefinitionListParams{})
		require.NoError(t, err)
		require.Len(t, newest, 1)
		all, err := store.DefinitionList(ctx, persistence.DefinitionListParams{AllVersions: true})
		require.NoError(t, err)
		require.Len(t, all, 2)
		many, err := store.DefinitionGetMany(ctx, []persistence.DefinitionKey{{Type: "a", Version: 1}, {Type: "b", Version: 1}})
		require.NoError(t, err)
		require.Len(t, many, 1)

		require.NoError(t, store.DefinitionSetReleaseState(ctx, persistence.DefinitionSetReleaseStateParams{Type: "a", State: persistence.ReleaseOffline}))
		latest, err = store.DefinitionGet(ctx, persistence.DefinitionGetParams{Type: "a"})
		require.NoError(t, err)
		require.Equal(t, persistence.ReleaseOffline, latest.ReleaseState)
		require.ErrorIs(t, store.DefinitionSetReleaseState(ctx, persistence.DefinitionSetReleaseStateParams{Type: "zz", State: persistence.ReleaseOffline}), persistence.ErrNotFound)
	})
}

func TestDefinitionSaveConcurrent(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		var wg sync.WaitGroup
		ids := make([]int64, 6)
		for i := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d, _, err := store.DefinitionSave(ctx, persistence.DefinitionSaveParams{Type: "c", Checksum: "same", Spec: json.RawMessage(`{}`), ExecutorGroup: "default"})
				require.NoError(t, err)
				ids[i] = d.ID
			}()
		}
		wg.Wait()
		for _, id := range ids {
			require.Equal(t, ids[0], id)
		}
	})
}

// Nodes saving different contents of one type at once each get a version of their own, and the
// definition each is handed back is the one stored under its ID (MariaDB returns the stored row of
// a duplicate from INSERT ... RETURNING, which once passed for a new version).
func TestDefinitionSaveConcurrentVersions(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		defs := make([]*persistence.Definition, 6)
		errs := make([]error, len(defs))
		created := make([]bool, len(defs))
		var wg sync.WaitGroup
		for i := range defs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defs[i], created[i], errs[i] = store.DefinitionSave(ctx, persistence.DefinitionSaveParams{Type: "v", Checksum: fmt.Sprint("sum-", i),
					Spec: json.RawMessage(`{}`), ExecutorGroup: "default"})
			}()
		}
		wg.Wait()
		// Checked here, not in the goroutines: a failure there would not stop the test, which
		// then dereferenced the missing definition and crashed the whole package's run.
		for i := range defs {
			require.NoError(t, errs[i], "save %d", i)
			require.True(t, created[i], "save %d", i)
		}
		versions := map[int]bool{}
		for i, d := range defs {
			versions[d.Version] = true
			stored, err := store.DefinitionGet(ctx, persistence.DefinitionGetParams{Type: "v", Version: d.Version})
			require.NoError(t, err)
			require.Equal(t, fmt.Sprint("sum-", i), stored.Checksum)
			require.Equal(t, d.ID, stored.ID)
		}
		require.Len(t, versions, len(defs))
	})
}

// However many save different contents of one type at once, each gets a version: every round of
// the race stores one, so a saver's attempts must outlast the others, not stop at a fixed few
// (five attempts failed the sixth of six savers that lost each round, now and then in CI).
func TestDefinitionSaveManyConcurrentVersions(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		const savers = 24
		errs := make([]error, savers)
		versions := make([]int, savers)
		var wg sync.WaitGroup
		for i := range savers {
			wg.Go(func() {
				d, _, err := store.DefinitionSave(context.Background(), persistence.DefinitionSaveParams{Type: "many", Checksum: fmt.Sprint("sum-", i),
					Spec: json.RawMessage(`{}`), ExecutorGroup: "default"})
				errs[i] = err
				if err == nil {
					versions[i] = d.Version
				}
			})
		}
		wg.Wait()
		seen := map[int]bool{}
		for i := range savers {
			require.NoError(t, errs[i], "save %d", i)
			seen[versions[i]] = true
		}
		require.Len(t, seen, savers, "one version each")
	})
}

func TestWorkflowInsertGetSave(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		now := persistence.Now()
		w := newWorkflow("t", persistence.StatusCreated, &now)
		w.ExternalID = ptr("ext-1")
		w.Variables = json.RawMessage(`{"a":1}`)
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{w}))
		require.NotZero(t, w.ID)

		got, err := store.WorkflowGet(ctx, w.ID)
		require.NoError(t, err)
		require.Equal(t, "ext-1", *got.ExternalID)
		require.JSONEq(t, `{"a":1}`, string(got.Variables))
		require.JSONEq(t, `{}`, string(got.Input))
		require.True(t, now.Equal(*got.NextActivation), "time round-trips: %v vs %v", now, got.NextActivation)

		byExt, err := store.WorkflowGetByExternalID(ctx, "t", "ext-1")
		require.NoError(t, err)
		require.Equal(t, w.ID, byExt.ID)

		dup := newWorkflow("t", persistence.StatusCreated, &now)
		dup.ExternalID = ptr("ext-1")
		require.ErrorIs(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{dup}), persistence.ErrConflict)
		other := newWorkflow("other", persistence.StatusCreated, &now)
		other.ExternalID = ptr("ext-1")
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{other}), "external id is unique per type only")

		got.StateText = ptr("moved")
		require.NoError(t, store.WorkflowSave(ctx, got))
		stale := *byExt
		stale.StateText = ptr("stale")
		require.ErrorIs(t, store.WorkflowSave(ctx, &stale), persistence.ErrConflict)
		again, err := store.WorkflowGet(ctx, w.ID)
		require.NoError(t, err)
		require.Equal(t, "moved", *again.StateText)

		_, err = store.WorkflowGet(ctx, 999999)
		require.ErrorIs(t, err, persistence.ErrNotFound)
		many, err := store.WorkflowGetMany(ctx, []int64{w.ID, other.ID, 424242})
		require.NoError(t, err)
		require.Len(t, many, 2)
	})
}

func TestWorkflowClaimOrderAndExclusivity(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		now := persistence.Now()
		past, future := now.Add(-time.Minute), now.Add(time.Hour)
		low := newWorkflow("t", persistence.StatusCreated, &past)
		high := newWorkflow("t", persistence.StatusInProgress, &now)
		high.Priority = 5
		notDue := newWorkflow("t", persistence.StatusCreated, &future)
		paused := newWorkflow("t", persistence.StatusPaused, &past)
		otherGroup := newWorkflow("t", persistence.StatusCreated, &past)
		otherGroup.ExecutorGroup = "other"
		waitingNoTimer := newWorkflow("t", persistence.StatusWaiting, nil)
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{low, high, notDue, paused, otherGroup, waitingNoTimer}))

		exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Minute})
		require.NoError(t, err)
		claimed, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: 10, Now: now.Add(time.Second), StepDeadline: now.Add(time.Minute), Types: []string{"t"}})
		require.NoError(t, err)
		require.Len(t, claimed, 2)
		ids := map[int64]*persistence.Workflow{}
		for _, w := range claimed {
			ids[w.ID] = w
			require.Equal(t, persistence.StatusExecuting, w.Status)
			require.Equal(t, exec.ID, *w.ExecutorID)
			require.Equal(t, 1, w.Version)
			require.NotNil(t, w.Started)
		}
		require.Contains(t, ids, low.ID)
		require.Contains(t, ids, high.ID)

		again, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: 10, Now: now.Add(time.Second), StepDeadline: now.Add(time.Minute), Types: []string{"t"}})
		require.NoError(t, err)
		require.Empty(t, again, "claimed workflows are not claimed twice")

		// Complete one: fenced by executor and version.
		done, err := store.WorkflowCompleteMany(ctx, []persistence.WorkflowCompletion{
			{ID: low.ID, ExecutorID: exec.ID, ClaimedVersion: 1, Status: persistence.StatusFinished, State: "end", Variables: []byte(`{"x":true}`), Finished: ptr(now)},
			{ID: high.ID, ExecutorID: exec.ID, ClaimedVersion: 0, Status: persistence.StatusFinished, State: "end", Variables: []byte(`{}`)},
		})
		require.NoError(t, err)
		require.Equal(t, []int64{low.ID}, done, "a stale version writes nothing")
		got, err := store.WorkflowGet(ctx, low.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusFinished, got.Status)
		require.Nil(t, got.ExecutorID)
		require.JSONEq(t, `{"x":true}`, string(got.Variables))
		require.Equal(t, 2, got.Version)
		stillHeld, err := store.WorkflowGet(ctx, high.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusExecuting, stillHeld.Status)
	})
}

func TestWorkflowClaimConcurrentClaimersNeverShare(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		past := persistence.Now().Add(-time.Second)
		var wfs []*persistence.Workflow
		for range 200 {
			wfs = append(wfs, newWorkflow("t", persistence.StatusCreated, &past))
		}
		require.NoError(t, store.WorkflowInsertMany(ctx, wfs))
		var mu sync.Mutex
		seen := map[int64]int{}
		var wg sync.WaitGroup
		for range 4 {
			exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Minute})
			require.NoError(t, err)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					claimed, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: 7, Now: persistence.Now(), StepDeadline: persistence.Now().Add(time.Minute), Types: []string{"t"}})
					require.NoError(t, err)
					if len(claimed) == 0 {
						return
					}
					mu.Lock()
					for _, w := range claimed {
						seen[w.ID]++
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		require.Len(t, seen, 200)
		for id, n := range seen {
			require.Equal(t, 1, n, "workflow %d claimed %d times", id, n)
		}
	})
}

func TestWorkflowWake(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		waitingAny := newWorkflow("t", persistence.StatusWaiting, nil)
		waitingApprove := newWorkflow("t", persistence.StatusWaiting, nil)
		waitingApprove.WaitSignal = ptr("approve")
		running := newWorkflow("t", persistence.StatusInProgress, nil)
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{waitingAny, waitingApprove, running}))

		woken, err := store.WorkflowWake(ctx, persistence.WorkflowWakeParams{IDs: []int64{waitingApprove.ID, running.ID}, Signal: "other", Now: persistence.Now()})
		require.NoError(t, err)
		require.Empty(t, woken, "a signal of another name does not wake")
		woken, err = store.WorkflowWake(ctx, persistence.WorkflowWakeParams{IDs: []int64{waitingAny.ID, waitingApprove.ID, running.ID}, Signal: "approve", Now: persistence.Now()})
		require.NoError(t, err)
		require.ElementsMatch(t, []int64{waitingAny.ID, waitingApprove.ID}, woken)
		got, err := store.WorkflowGet(ctx, waitingApprove.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusInProgress, got.Status)
		require.NotNil(t, got.NextActivation)
	})
}

func TestHistoryRows(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		w1 := newWorkflow("t", persistence.StatusCreated, nil)
		w2 := newWorkflow("t", persistence.StatusCreated, nil)
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{w1, w2}))

		ti := &persistence.TaskInstance{WorkflowID: w1.ID, State: "start", TaskType: "handler", Attempt: 1, Status: persistence.TaskSucceeded, Started: persistence.Now()}
		require.NoError(t, store.TaskInstanceInsertMany(ctx, []*persistence.TaskInstance{ti}))
		var actions []*persistence.Action
		for i := range 5 {
			actions = append(actions, &persistence.Action{WorkflowID: w1.ID, Type: persistence.ActionStateExecution, State: "s", RetryNo: i, TaskInstanceID: &ti.ID})
			actions = append(actions, &persistence.Action{WorkflowID: w2.ID, Type: persistence.ActionExternalChange, State: "s", Actor: ptr("op")})
		}
		require.NoError(t, store.ActionInsertMany(ctx, actions))
		require.NoError(t, store.ActionVariableInsertMany(ctx, []*persistence.ActionVariable{
			{WorkflowID: w1.ID, ActionID: actions[0].ID, Key: "a", Value: json.RawMessage(`1`)},
			{WorkflowID: w1.ID, ActionID: actions[2].ID, Key: "a", Value: json.RawMessage(`2`)},
			{WorkflowID: w1.ID, ActionID: actions[2].ID, Key: "b", Value: json.RawMessage(`"x"`)},
			{WorkflowID: w1.ID, ActionID: actions[4].ID, Key: "b", Value: json.RawMessage(`null`)},
		}))
		asOf, err := store.VariablesAsOf(ctx, w1.ID, actions[2].ID)
		require.NoError(t, err)
		require.JSONEq(t, `2`, string(asOf["a"]))
		require.JSONEq(t, `"x"`, string(asOf["b"]))
		asOf, err = store.VariablesAsOf(ctx, w1.ID, actions[4].ID)
		require.NoError(t, err)
		require.NotContains(t, asOf, "b")
		vars, err := store.ActionVariableList(ctx, []int64{actions[2].ID})
		require.NoError(t, err)
		require.Len(t, vars, 2)

		page, err := store.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: []int64{w1.ID, w2.ID}, Page: persistence.PageParams{Limit: 2}})
		require.NoError(t, err)
		require.Len(t, page, 4, "the limit applies per workflow")
		one, err := store.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: []int64{w1.ID}, Page: persistence.PageParams{After: actions[0].ID, Limit: 10}})
		require.NoError(t, err)
		require.Len(t, one, 4)
		desc, err := store.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: []int64{w1.ID}, Page: persistence.PageParams{Limit: 1, Desc: true}})
		require.NoError(t, err)
		require.Equal(t, actions[8].ID, desc[0].ID)
		counts, err := store.CountByWorkflow(ctx, "actions", []int64{w1.ID, w2.ID})
		require.NoError(t, err)
		require.Equal(t, map[int64]int{w1.ID: 5, w2.ID: 5}, counts)

		tis, err := store.TaskInstanceList(ctx, persistence.TaskInstanceListParams{WorkflowIDs: []int64{w1.ID}})
		require.NoError(t, err)
		require.Len(t, tis, 1)
		require.NoError(t, store.ActivityLogInsertMany(ctx, []*persistence.ActivityLog{{WorkflowID: w1.ID, TaskInstanceID: &ti.ID, Name: "n", Value: "v", At: persistence.Now()}}))
		logs, err := store.ActivityLogList(ctx, persistence.ActivityLogListParams{TaskInstanceIDs: []int64{ti.ID}})
		require.NoError(t, err)
		require.Len(t, logs, 1)

		se1, err := store.SideEffectRecord(ctx, persistence.SideEffectRecordParams{WorkflowID: w1.ID, Key: "k", ValueType: "string", Value: json.RawMessage(`"first"`)})
		require.NoError(t, err)
		se2, err := store.SideEffectRecord(ctx, persistence.SideEffectRecordParams{WorkflowID: w1.ID, Key: "k", ValueType: "string", Value: json.RawMessage(`"second"`)})
		require.NoError(t, err)
		require.Equal(t, se1.ID, se2.ID)
		require.JSONEq(t, `"first"`, string(se2.Value), "the first recorded value wins")
		ses, err := store.SideEffectList(ctx, []int64{w1.ID})
		require.NoError(t, err)
		require.Len(t, ses, 1)
	})
}

func TestExecutorsAndRecovery(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		dead, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Millisecond})
		require.NoError(t, err)
		live, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 2, Group: "default", Expiry: time.Hour})
		require.NoError(t, err)
		past := persistence.Now().Add(-time.Second)
		w := newWorkflow("t", persistence.StatusCreated, &past)
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{w}))
		claimed, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: dead.ID, Group: "default", Limit: 1, Now: persistence.Now(), StepDeadline: persistence.Now().Add(time.Hour), Types: []string{"t"}})
		require.NoError(t, err)
		require.Len(t, claimed, 1)

		time.Sleep(5 * time.Millisecond)
		expired, err := store.ExecutorExpireDead(ctx, persistence.Now())
		require.NoError(t, err)
		require.Equal(t, []int64{dead.ID}, expired)
		require.ErrorIs(t, store.ExecutorHeartbeat(ctx, dead.ID, time.Hour), persistence.ErrNotFound, "a dead executor learns it is dead")
		require.NoError(t, store.ExecutorHeartbeat(ctx, live.ID, time.Hour))

		orphans, err := store.WorkflowOrphaned(ctx, 10)
		require.NoError(t, err)
		require.Len(t, orphans, 1)
		require.Equal(t, w.ID, orphans[0].ID)

		all, err := store.ExecutorList(ctx)
		require.NoError(t, err)
		require.Len(t, all, 2)
		require.False(t, all[1].Alive(persistence.Now()))
		require.True(t, all[0].Alive(persistence.Now()))
		require.NoError(t, store.ExecutorStop(ctx, live.ID))
		got, err := store.ExecutorGetMany(ctx, []int64{live.ID})
		require.NoError(t, err)
		require.NotNil(t, got[0].Stopped)
	})
}

func TestSignalsAndForms(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		w := newWorkflow("t", persistence.StatusWaiting, nil)
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{w}))
		s1 := &persistence.Signal{WorkflowID: w.ID, Name: "approve", Payload: json.RawMessage(`{"by":"ann"}`)}
		s2 := &persistence.Signal{WorkflowID: w.ID, Name: "approve"}
		require.NoError(t, store.SignalInsert(ctx, s1))
		require.NoError(t, store.SignalInsert(ctx, s2))
		has, err := store.SignalHasPending(ctx, map[int64][]string{w.ID: {"approve"}})
		require.NoError(t, err)
		require.True(t, has[w.ID])
		pending, err := store.SignalPending(ctx, []int64{w.ID}, "approve")
		require.NoError(t, err)
		require.Equal(t, s1.ID, pending[w.ID].ID, "the first signal is consumed first")
		require.NoError(t, store.SignalConsumeMany(ctx, map[int64]int64{s1.ID: 1}, persistence.Now()))
		pending, err = store.SignalPending(ctx, []int64{w.ID}, "approve")
		require.NoError(t, err)
		require.Equal(t, s2.ID, pending[w.ID].ID)
		s3 := &persistence.Signal{WorkflowID: w.ID, Name: "other"}
		require.NoError(t, store.SignalInsert(ctx, s3))
		require.NoError(t, store.SignalConsumeMany(ctx, map[int64]int64{s2.ID: 2, s3.ID: 3}, persistence.Now()))
		all, err := store.SignalList(ctx, []int64{w.ID})
		require.NoError(t, err)
		require.Len(t, all, 3)
		for i, want := range []int64{1, 2, 3} {
			require.NotNil(t, all[i].Consumed)
			require.Equal(t, want, *all[i].ConsumedActionID, "each signal keeps the action that consumed it")
		}

		require.NoError(t, store.FormSubmissionInsert(ctx, &persistence.FormSubmission{WorkflowID: w.ID, State: "review", Data: json.RawMessage(`{"ok":true}`), SubmittedBy: "ann"}))
		forms, err := store.FormSubmissionList(ctx, w.ID)
		require.NoError(t, err)
		require.Len(t, forms, 1)
	})
}

func TestIdempotencySchedulesTokens(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		w := newWorkflow("t", persistence.StatusCreated, nil)
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{w}))
		_, err := store.IdempotencyKeyGet(ctx, "start", "k1")
		require.ErrorIs(t, err, persistence.ErrNotFound)
		require.NoError(t, store.IdempotencyKeyInsert(ctx, &persistence.IdempotencyKey{Operation: "start", Key: "k1", WorkflowID: w.ID, RequestHash: "h1"}))
		require.ErrorIs(t, store.IdempotencyKeyInsert(ctx, &persistence.IdempotencyKey{Operation: "start", Key: "k1", WorkflowID: w.ID, RequestHash: "h2"}), persistence.ErrConflict)
		got, err := store.IdempotencyKeyGet(ctx, "start", "k1")
		require.NoError(t, err)
		require.Equal(t, w.ID, got.WorkflowID)
		require.Equal(t, "h1", got.RequestHash, "the first request's fingerprint is kept")

		past := persistence.Now().Add(-time.Minute)
		sc := &persistence.Schedule{DefinitionType: "t", Cron: "* * * * *", Timezone: "UTC", OverlapPolicy: "SKIP", NextFire: &past}
		require.NoError(t, store.ScheduleInsert(ctx, sc))
		due, err := store.ScheduleDue(ctx, persistence.Now(), 10)
		require.NoError(t, err)
		require.Len(t, due, 1)
		sc.Paused = true
		require.NoError(t, store.ScheduleSave(ctx, sc))
		due, err = store.ScheduleDue(ctx, persistence.Now(), 10)
		require.NoError(t, err)
		require.Empty(t, due)
		list, err := store.ScheduleList(ctx)
		require.NoError(t, err)
		require.Len(t, list, 1)

		tok := &persistence.APIToken{Name: "ops", Hash: "h1", Role: "admin"}
		require.NoError(t, store.APITokenInsert(ctx, tok))
		_, err = store.APITokenGetByHash(ctx, "h1")
		require.NoError(t, err)
		require.NoError(t, store.APITokenRevoke(ctx, "ops"))
		_, err = store.APITokenGetByHash(ctx, "h1")
		require.ErrorIs(t, err, persistence.ErrNotFound)
	})
}

func TestOpenRejectsBadURLs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, err := persistence.Open(ctx, "oracle://x/db", persistence.OpenOptions{})
	require.ErrorIs(t, err, persistence.ErrUnsupportedURL)
	_, err = persistence.Open(ctx, "mysql://x", persistence.OpenOptions{})
	require.ErrorIs(t, err, persistence.ErrUnsupportedURL, "a MySQL URL names its database")
	_, err = persistence.Open(ctx, "mysql://nobody:secret@127.0.0.1:1/none", persistence.OpenOptions{})
	require.Error(t, err)
	require.False(t, errors.Is(err, persistence.ErrUnsupportedURL))
	require.NotContains(t, err.Error(), "secret")
	_, err = persistence.Open(ctx, "nonsense", persistence.OpenOptions{})
	require.ErrorIs(t, err, persistence.ErrUnsupportedURL)
	_, err = persistence.Open(ctx, "postgres://nobody@127.0.0.1:1/none?connect_timeout=1", persistence.OpenOptions{})
	require.Error(t, err)
	require.False(t, errors.Is(err, persistence.ErrUnsupportedURL))
}

// A step's error is stored whole, however long (MySQL's TEXT would refuse one past 64 KB).
func TestLongErrorsAreStored(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		long := strings.Repeat("é", 70_000)
		now := persistence.Now()
		w := newWorkflow("t", persistence.StatusCreated, &now)
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{w}))
		exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Minute})
		require.NoError(t, err)
		claimed, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: 1,
			Now: now, StepDeadline: now.Add(time.Minute), Types: []string{"t"}})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		ids, err := store.WorkflowCompleteMany(ctx, []persistence.WorkflowCompletion{{ID: w.ID, ExecutorID: exec.ID,
			ClaimedVersion: claimed[0].Version, Status: persistence.StatusManual, State: "start", Variables: []byte(`{}`), LastError: &long}})
		require.NoError(t, err)
		require.Equal(t, []int64{w.ID}, ids)
		ti := &persistence.TaskInstance{WorkflowID: w.ID, State: "start", TaskType: "step", Attempt: 1, Status: persistence.TaskFailed,
			Started: now, Error: &long}
		require.NoError(t, store.TaskInstanceInsertMany(ctx, []*persistence.TaskInstance{ti}))

		got, err := store.WorkflowGet(ctx, w.ID)
		require.NoError(t, err)
		require.Equal(t, long, *got.LastError)
		tis, err := store.TaskInstanceGetMany(ctx, []int64{ti.ID})
		require.NoError(t, err)
		require.Len(t, tis, 1)
		require.Equal(t, long, *tis[0].Error)
	})
}
