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

// The batched writes of starts and completions (workflows, task instances, actions, change events,
// and the completion's update) store every value as given, on every backend: quotes, backslashes,
// line breaks, characters outside ASCII, JSON with escapes, missing values, large IDs. On SQLite
// they travel as one JSON document per statement; here is what that must not change.
func TestBatchedWritesStoreValuesAsGiven(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		odd := "it's \"quoted\", back\\slash,\nnew line, tab\t, ü 雪 😀, <&>, \\u0041 and ?"
		str := func(s string) *string { return &s }
		input := json.RawMessage(`{"text":"` + "a \\\"b\\\" \\\\ \\n \\u00fc 😀" + `","n":9007199254740993,"list":[null,true,1.5]}`)
		due := persistence.Now().Add(time.Hour)
		var wfs []*persistence.Workflow
		for i := range 3 {
			w := newWorkflow("t.values", persistence.StatusInProgress, &due)
			w.Input, w.Variables = input, json.RawMessage(`{}`)
			w.BusinessKey, w.StateText, w.ConcurrencyKey = str(odd), str(odd), str("key "+odd)
			w.Priority = i - 1
			w.Created, w.Modified = persistence.Now(), persistence.Now()
			wfs = append(wfs, w)
		}
		wfs[1].BusinessKey, wfs[1].StateText, wfs[1].ConcurrencyKey = nil, nil, nil
		require.NoError(t, store.WorkflowInsertMany(ctx, wfs))
		require.True(t, wfs[0].ID < wfs[1].ID && wfs[1].ID < wfs[2].ID, "IDs in input order")

		for i, w := range wfs {
			got, err := store.WorkflowGet(ctx, w.ID)
			require.NoError(t, err)
			require.Equal(t, w.BusinessKey, got.BusinessKey)
			require.Equal(t, w.StateText, got.StateText)
			require.Equal(t, w.ConcurrencyKey, got.ConcurrencyKey)
			require.Equal(t, i-1, got.Priority)
			require.JSONEq(t, string(input), string(got.Input))
			require.True(t, due.Equal(*got.NextActivation))
			require.Nil(t, got.ExternalID)
			require.Nil(t, got.Finished)
		}

		exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Minute})
		require.NoError(t, err)
		claimed, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: 10,
			Now: due, StepDeadline: due.Add(time.Minute), Types: []string{"t.values"}})
		require.NoError(t, err)
		require.Len(t, claimed, 3)

		ended := persistence.Now()
		vars := json.RawMessage(`{"v":"` + "\\\"x\\\" \\n 雪" + `"}`)
		var cs []persistence.WorkflowCompletion
		for _, w := range claimed {
			cs = append(cs, persistence.WorkflowCompletion{ID: w.ID, ExecutorID: exec.ID, ClaimedVersion: w.Version,
				Status: persistence.StatusFinished, State: "done " + odd, StateText: str(odd), LastError: str("error: " + odd),
				Variables: vars, Finished: &ended, Steps: 1})
		}
		cs[1].StateText, cs[1].LastError = nil, nil
		written, err := store.WorkflowCompleteMany(ctx, cs)
		require.NoError(t, err)
		require.ElementsMatch(t, []int64{wfs[0].ID, wfs[1].ID, wfs[2].ID}, written)
		again, err := store.WorkflowCompleteMany(ctx, cs)
		require.NoError(t, err)
		require.Empty(t, again, "a completion at a version no longer current writes nothing")
		for _, c := range cs {
			got, err := store.WorkflowGet(ctx, c.ID)
			require.NoError(t, err)
			require.Equal(t, persistence.StatusFinished, got.Status)
			require.Equal(t, c.State, got.State)
			require.Equal(t, c.StateText, got.StateText)
			require.Equal(t, c.LastError, got.LastError)
			require.JSONEq(t, string(vars), string(got.Variables))
			require.True(t, ended.Equal(*got.Finished))
			require.Nil(t, got.NextActivation)
			require.Nil(t, got.ExecutorID)
			require.Equal(t, 1, got.Steps)
		}

		w := wfs[0]
		tis := []*persistence.TaskInstance{
			{WorkflowID: w.ID, State: odd, TaskType: "STEP", Attempt: 1, Status: persistence.TaskFailed, ExecutorID: &exec.ID, Host: odd,
				Started: ended, Finished: &ended, Error: str(odd)},
			{WorkflowID: w.ID, State: "s", TaskType: "STEP", Attempt: 2, Status: persistence.TaskSucceeded, Host: "h",
				Started: ended, Output: json.RawMessage(`{"o":"` + "\\u00fc \\\"q\\\"" + `"}`)},
		}
		require.NoError(t, store.TaskInstanceInsertMany(ctx, tis))
		gotTIs, err := store.TaskInstanceList(ctx, persistence.TaskInstanceListParams{WorkflowIDs: []int64{w.ID}})
		require.NoError(t, err)
		require.Len(t, gotTIs, 2)
		byID := map[int64]*persistence.TaskInstance{}
		for _, ti := range gotTIs {
			byID[ti.ID] = ti
		}
		for _, ti := range tis {
			got := byID[ti.ID]
			require.NotNil(t, got, "the ID handed back is the row's")
			require.Equal(t, ti.State, got.State)
			require.Equal(t, ti.Host, got.Host)
			require.Equal(t, ti.Error, got.Error)
			require.Equal(t, ti.ExecutorID, got.ExecutorID)
			require.Equal(t, ti.Attempt, got.Attempt)
			if ti.Output == nil {
				require.Contains(t, []string{"", "null"}, string(got.Output), "no output (MariaDB reads a JSON null)")
			} else {
				require.JSONEq(t, string(ti.Output), string(got.Output))
			}
		}

		actions := []*persistence.Action{
			{WorkflowID: w.ID, Type: persistence.ActionStateExecution, FromState: str(odd), State: odd, StateText: str(odd),
				RetryNo: 2, ExecutorID: &exec.ID, Actor: str("actor " + odd), TaskInstanceID: &tis[0].ID, At: ended},
			{WorkflowID: w.ID, Type: persistence.ActionStateExecution, State: "s", At: ended},
		}
		require.NoError(t, store.ActionInsertMany(ctx, actions))
		gotActions, err := store.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: []int64{w.ID}})
		require.NoError(t, err)
		require.Len(t, gotActions, 2)
		for _, a := range actions {
			var got *persistence.Action
			for _, g := range gotActions {
				if g.ID == a.ID {
					got = g
				}
			}
			require.NotNil(t, got, "the ID handed back is the row's")
			require.Equal(t, a.FromState, got.FromState)
			require.Equal(t, a.State, got.State)
			require.Equal(t, a.StateText, got.StateText)
			require.Equal(t, a.Actor, got.Actor)
			require.Equal(t, a.RetryNo, got.RetryNo)
			require.Equal(t, a.TaskInstanceID, got.TaskInstanceID)
			require.True(t, a.At.Equal(got.At))
		}
	})
}
