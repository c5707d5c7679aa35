package graph_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

type stuckNode struct {
	ID          string
	BusinessKey *string
	StuckReason *string
}

// stuckList lists the workflows with their stuck reasons, all or by the stuck filter.
func stuckList(t *testing.T, b *bundle, stuck any) ([]stuckNode, int, int) {
	t.Helper()
	var resp struct {
		Workflows     struct{ Nodes []stuckNode }
		WorkflowStats struct{ Total, Stuck int }
	}
	b.must(t, `query($s: Boolean) { workflows(filter: {stuck: $s}, first: 100) { nodes { id businessKey stuckReason } }
		workflowStats { total stuck } }`, &resp, map[string]any{"s": stuck})
	return resp.Workflows.Nodes, resp.WorkflowStats.Total, resp.WorkflowStats.Stuck
}

func reasonsByKey(nodes []stuckNode) map[string]string {
	out := map[string]string{}
	for _, n := range nodes {
		r := ""
		if n.StuckReason != nil {
			r = *n.StuckReason
		}
		key := n.ID
		if n.BusinessKey != nil {
			key = *n.BusinessKey
		}
		out[key] = r
	}
	return out
}

// requireFilterAgrees checks that stuck: true lists exactly the workflows with a reason, and
// stuck: false exactly those without, and that workflowStats counts the stuck ones.
func requireFilterAgrees(t *testing.T, b *bundle) map[string]string {
	t.Helper()
	all, total, stuckCount := stuckList(t, b, nil)
	require.Len(t, all, total)
	stuck, _, _ := stuckList(t, b, true)
	fine, _, _ := stuckList(t, b, false)
	require.Equal(t, len(all), len(stuck)+len(fine))
	require.Equal(t, len(stuck), stuckCount, "workflowStats.stuck")
	for _, n := range stuck {
		require.NotNil(t, n.StuckReason, "every workflow the filter finds stuck has a reason")
	}
	for _, n := range fine {
		require.Nil(t, n.StuckReason, "no workflow the filter finds fine has a reason: %v", n.StuckReason)
	}
	return reasonsByKey(all)
}

func TestStuckWorkflowsHaveAReasonAndAFilter(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		b := setup(t, store)
		b.start(t, map[string]any{"businessKey": "fresh"})
		reasons := requireFilterAgrees(t, b)
		require.Equal(t, `no live executor serves type "test.flow" in executor group "default"`, reasons["fresh"])

		// A live executor that claims the type serves it: a workflow due just now is fine.
		exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: workflow.DefaultGroup, Expiry: time.Hour})
		require.NoError(t, err)
		require.NoError(t, store.ExecutorTypesSet(ctx, exec.ID, []string{"other.type"}))
		require.Contains(t, requireFilterAgrees(t, b)["fresh"], "no live executor serves", "an executor of other types does not serve it")
		require.NoError(t, store.ExecutorTypesSet(ctx, exec.ID, []string{"other.type", "test.flow"}))
		require.Equal(t, "", requireFilterAgrees(t, b)["fresh"])
		var execs struct{ Executors []struct{ Types []string } }
		b.must(t, `{ executors(alive: true) { types } }`, &execs, nil)
		require.Equal(t, []string{"other.type", "test.flow"}, execs.Executors[0].Types)

		// Due for long, unclaimed: the nodes are behind, by how much.
		b.start(t, map[string]any{"businessKey": "late", "startAt": time.Now().Add(-5 * time.Minute).UTC().Format(time.RFC3339)})
		require.Regexp(t, `^due for 5m\d+s but not claimed: the nodes are behind$`, requireFilterAgrees(t, b)["late"])

		// An attempt past its deadline.
		past := persistence.Now().Add(-time.Minute)
		claimed, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: workflow.DefaultGroup, Limit: 10,
			Now: persistence.Now(), StepDeadline: past, Types: []string{"test.flow"}})
		require.NoError(t, err)
		require.Len(t, claimed, 2)
		reasons = requireFilterAgrees(t, b)
		require.Regexp(t, `^its attempt has run 1m\d*s past its deadline$`, reasons["late"])
		require.Regexp(t, `^its attempt has run 1m\d*s past its deadline$`, reasons["fresh"])

		// Waiting for a remote function no live worker polls.
		w := &persistence.Workflow{Type: "test.flow", DefinitionVersion: 1, BusinessKey: ptr("remote"), Status: persistence.StatusWaiting,
			State: "work", ExecutorGroup: workflow.DefaultGroup, Input: json.RawMessage(`{}`), Variables: json.RawMessage(`{}`),
			Created: persistence.Now(), Modified: persistence.Now()}
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{w}))
		require.NoError(t, store.RemoteTaskCreateMany(ctx, []*persistence.RemoteTask{{Function: "fx.charge", WorkflowID: w.ID, State: "work",
			ExecutorGroup: workflow.DefaultGroup, Input: json.RawMessage(`{}`), Status: persistence.RemoteTaskPending, MaxAttempts: 3, Created: persistence.Now()}}))
		require.Equal(t, `no remote worker polled function "fx.charge" in the last 30s`, requireFilterAgrees(t, b)["remote"])
		require.NoError(t, store.RemoteWorkerSeen(ctx, "old", []string{"fx.charge"}, time.Now().Add(-time.Hour)))
		require.NoError(t, store.RemoteWorkerSeen(ctx, "busy", []string{"fx.other"}, time.Now()))
		require.NotEmpty(t, requireFilterAgrees(t, b)["remote"], "a worker gone or serving other functions does not count")
		require.NoError(t, store.RemoteWorkerSeen(ctx, "live", []string{"fx.other", "fx.charge"}, time.Now()))
		require.Equal(t, "", requireFilterAgrees(t, b)["remote"])

		var workers struct {
			All, Alive, Gone []struct {
				Name  string
				Alive bool
			}
		}
		b.must(t, `{ all: remoteWorkers { name alive } alive: remoteWorkers(alive: true) { name alive } gone: remoteWorkers(alive: false) { name alive } }`, &workers, nil)
		require.Len(t, workers.All, 3)
		require.Len(t, workers.Alive, 2)
		require.Len(t, workers.Gone, 1)
		require.Equal(t, "old", workers.Gone[0].Name)
		require.False(t, workers.Gone[0].Alive)

		// Subscriptions refuse the stuck filter.
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		sse := sseEvents(t, b, sctx, map[string]any{"filter": map[string]any{"stuck": true}})
		defer sse.Close()
		var resp struct{ Errors []gqlError }
		require.NoError(t, sse.Next(&resp))
		require.NotEmpty(t, resp.Errors)
		require.Equal(t, "INVALID_INPUT", resp.Errors[0].Extensions["code"])
		require.Equal(t, "filter.stuck", resp.Errors[0].Extensions["field"])
	})
}
