package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
	"github.com/cairnflow/cairn/workflow/demo"
)

// A node killed in the middle of a step loses nothing: the next node (here a restart on the same
// database) takes the workflow over once the dead node's heartbeat expires, and finishes it.
func TestKilledNodesWorkIsTakenOver(t *testing.T) {
	t.Parallel()
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			url := dbtest.URL(t, kind)
			args := []string{"--database", url, "--demo", "--no-api", "--log-format", "json",
				"--poll-interval", "100ms", "--heartbeat-interval", "200ms", "--executor-expiry", "3s"}
			first := startNode(t, nil, args...)

			ctx := context.Background()
			store := openStore(t, url)
			engine := engine.New(store, engine.Options{})
			require.NoError(t, demo.Register(ctx, engine))
			started, err := engine.Start(ctx, workflow.StartParams{
				Type: "demo.order", Input: json.RawMessage(`{"shipDelayMs": 3000}`)})
			require.NoError(t, err)
			id := started.Workflow.ID

			// Kill the node while it runs the ship step.
			held := waitWorkflow(t, store, id, func(w *persistence.Workflow) bool {
				return w.State == "ship" && w.Status == persistence.StatusExecuting
			})
			require.NotNil(t, held.ExecutorID)
			require.NoError(t, first.cmd.Process.Kill())
			<-first.exited

			second := startNode(t, nil, args...)
			done := waitWorkflow(t, store, id, func(w *persistence.Workflow) bool {
				return w.Status == persistence.StatusFinished
			})
			require.Equal(t, "done", done.State)
			require.Zero(t, second.stop(t), second.output())

			actions, err := store.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: []int64{id}})
			require.NoError(t, err)
			var recoveries int
			for _, a := range actions {
				if a.Type == persistence.ActionRecovery {
					recoveries++
				}
			}
			require.Equal(t, 1, recoveries, "one RECOVERY action for the one takeover")
			tasks, err := store.TaskInstanceList(ctx, persistence.TaskInstanceListParams{WorkflowIDs: []int64{id}})
			require.NoError(t, err)
			var lost int
			for _, ti := range tasks {
				if ti.Status == persistence.TaskLost {
					lost++
					require.Equal(t, "ship", ti.State)
				}
			}
			require.Equal(t, 1, lost, "the ship attempt of the killed node is marked LOST")
		})
	}
}

// waitWorkflow polls a workflow until ok accepts it, for up to a minute.
func waitWorkflow(t *testing.T, store *persistence.Store, id int64, ok func(*persistence.Workflow) bool) *persistence.Workflow {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		w, err := store.WorkflowGet(context.Background(), id)
		require.NoError(t, err)
		if ok(w) {
			return w
		}
		if time.Now().After(deadline) {
			t.Fatalf("workflow %d did not reach the awaited condition within a minute; last: status %s, state %s", id, w.Status, w.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
