package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence/dbtest"
)

// A time past the year 9999 once stopped every claim on SQLite for good (it was stored as
// "10000-...", sorted before today and never parsed back). Now it is refused, naming the field,
// and the node goes on running workflows, also after a restart on the same database.
func TestATimePastYear9999IsRefusedAndExecutionGoesOn(t *testing.T) {
	t.Parallel()
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			db := dbtest.URL(t, kind)
			args := []string{"--database", db, "--demo", "--addr", "127.0.0.1:0", "--log-format", "json"}
			n := startNode(t, nil, args...)
			for _, q := range []struct{ query, field string }{
				{`mutation { startWorkflow(input: {type: "demo.order", startAt: "9999-12-31T23:59:59-23:59"}) { workflow { id } } }`, "startAt"},
				{`mutation { startWorkflow(input: {type: "demo.order", startAt: "0000-12-31T23:59:59Z"}) { workflow { id } } }`, "startAt"},
				{`mutation { createSchedule(input: {type: "demo.order", cron: "@daily", startAt: "9999-12-31T23:59:59-23:59"}) { schedule { id } } }`, "startAt"},
			} {
				r := n.query(t, q.query)
				requireRefused(t, r, http.StatusOK, "INVALID_INPUT")
				require.Equal(t, q.field, r.errors[0].Extensions["field"], r.raw)
			}
			runOrder(t, n)
			require.Zero(t, n.stop(t))

			n = startNode(t, nil, args...)
			runOrder(t, n)
		})
	}
}

// runOrder starts a demo.order on a node and waits until it has finished.
func runOrder(t *testing.T, n *node) {
	t.Helper()
	var started struct {
		StartWorkflow struct{ Workflow struct{ ID string } }
	}
	n.graphql(t, `mutation { startWorkflow(input: {type: "demo.order"}) { workflow { id } } }`, nil, &started)
	id := started.StartWorkflow.Workflow.ID
	waitFor(t, time.Minute, "the order to finish", func() bool {
		var got struct{ Workflow struct{ Status string } }
		n.graphql(t, `query($id: ID!) { workflow(id: $id) { status } }`, map[string]any{"id": id}, &got)
		return got.Workflow.Status == "FINISHED"
	})
}
