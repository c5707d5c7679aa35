package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
	"github.com/cairnflow/cairn/workflow/demo"
)

// A workflow whose step takes its node down each time it runs does not crash-loop the cluster:
// every attempt whose node died counts, and after its state's retry policy (demo.order's ship: the
// default 5 attempts) the workflow ends FAILED in its ERROR state with a Problem that says so. Here
// the node is killed (SIGKILL, as the OOM killer does) while it runs the step, and restarted, until
// the workflow ends.
func TestNodeKillingWorkflowEndsFailed(t *testing.T) {
	t.Parallel()
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			url := dbtest.URL(t, kind)
			args := []string{"--database", url, "--demo", "--no-api", "--log-format", "json",
				"--poll-interval", "100ms", "--heartbeat-interval", "200ms", "--executor-expiry", "1s"}
			ctx := context.Background()
			store := openStore(t, url)
			n := startNode(t, nil, args...)
			engine := engine.New(store, engine.Options{})
			require.NoError(t, demo.Register(ctx, engine))
			started, err := engine.Start(ctx, workflow.StartParams{
				Type: "demo.order", Input: json.RawMessage(`{"shipDelayMs": 600000}`)})
			require.NoError(t, err)
			id := started.Workflow.ID

			attempts := workflow.DefaultRetryPolicy.MaxAttempts
			for attempt := 1; attempt <= attempts; attempt++ {
				held := waitWorkflow(t, store, id, func(w *persistence.Workflow) bool {
					return w.State == "ship" && w.Status == persistence.StatusExecuting && w.Retries == attempt-1
				})
				require.NotNil(t, held.ExecutorID)
				require.NoError(t, n.cmd.Process.Kill())
				<-n.exited
				n = startNode(t, nil, args...)
			}
			w := waitWorkflow(t, store, id, func(w *persistence.Workflow) bool { return w.Status.Terminal() })
			require.Equal(t, persistence.StatusFailed, w.Status, n.output())
			require.Equal(t, "rejected", w.State)
			require.Equal(t, attempts, w.Retries)
			require.NotNil(t, w.LastError)
			var problem workflow.Problem
			require.NoError(t, json.Unmarshal([]byte(*w.LastError), &problem), *w.LastError)
			require.Equal(t, workflow.ProblemTypeRuntime, problem.Type)
			require.Equal(t, "node died", problem.Title)
			require.Zero(t, n.stop(t), n.output())

			tasks, err := store.TaskInstanceList(ctx, persistence.TaskInstanceListParams{WorkflowIDs: []int64{id}})
			require.NoError(t, err)
			var lost []int
			for _, ti := range tasks {
				if ti.State == "ship" {
					require.Equal(t, persistence.TaskLost, ti.Status)
					lost = append(lost, ti.Attempt)
				}
			}
			require.Equal(t, []int{1, 2, 3, 4, 5}, lost, "each killed attempt of ship is one LOST task instance")
		})
	}
}
