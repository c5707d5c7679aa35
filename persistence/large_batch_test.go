package persistence_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// A batch of workflows whose variables reach the engine's default limit (4 MiB each) is written
// on MariaDB: the start of workflows with large inputs, their completion and their variable
// history. One statement of 20 MiB passed max_allowed_packet (16 MiB by default) and the server
// reset the connection. (PostgreSQL and SQLite take a statement of any size; SQLite under -race
// takes minutes for these 60 MB, so the test runs where the bound is.)
func TestLargeBatchesAreWrittenOnMariaDB(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, persistence.KindMySQL)
	ctx := context.Background()
	const n = 5
	value := `"` + strings.Repeat("x", 1<<20-100) + `"`
	vars := fmt.Sprintf(`{"a":%s,"b":%s,"c":%s,"d":%s}`, value, value, value, value)
	now := persistence.Now()
	wfs := make([]*persistence.Workflow, n)
	for i := range wfs {
		wfs[i] = newWorkflow("t", persistence.StatusCreated, &now)
		wfs[i].Input = []byte(vars)
	}
	require.NoError(t, store.WorkflowInsertMany(ctx, wfs))
	for _, w := range wfs {
		require.NotZero(t, w.ID)
	}
	exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Minute})
	require.NoError(t, err)
	claimed, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: n,
		Now: now.Add(time.Second), StepDeadline: now.Add(time.Minute), Types: []string{"t"}})
	require.NoError(t, err)
	require.Len(t, claimed, n)
	cs := make([]persistence.WorkflowCompletion, n)
	for i, w := range claimed {
		cs[i] = persistence.WorkflowCompletion{ID: w.ID, ExecutorID: exec.ID, ClaimedVersion: w.Version, Status: persistence.StatusFinished,
			State: "end", Variables: []byte(vars), Finished: &now, Steps: 1}
	}
	var ids []int64
	require.NoError(t, store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		var err error
		ids, err = tx.WorkflowCompleteMany(ctx, cs)
		return err
	}))
	require.Len(t, ids, n)

	actions := make([]*persistence.Action, n)
	for i, w := range claimed {
		actions[i] = &persistence.Action{WorkflowID: w.ID, Type: persistence.ActionStateExecution, State: "end", At: now}
	}
	require.NoError(t, store.ActionInsertMany(ctx, actions))
	var history []*persistence.ActionVariable
	for _, a := range actions {
		for _, k := range []string{"a", "b", "c", "d"} {
			history = append(history, &persistence.ActionVariable{WorkflowID: a.WorkflowID, ActionID: a.ID, Key: k, Value: []byte(value)})
		}
	}
	require.NoError(t, store.ActionVariableInsertMany(ctx, history))

	for _, w := range claimed {
		got, err := store.WorkflowGet(ctx, w.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusFinished, got.Status)
		require.Equal(t, 1, got.Steps)
		require.True(t, len(got.Variables) >= len(vars), "the variables are stored whole (%d bytes)", len(got.Variables))
	}
	for _, a := range actions {
		got, err := store.ActionVariableList(ctx, []int64{a.ID})
		require.NoError(t, err)
		require.Len(t, got, 4)
	}
}
