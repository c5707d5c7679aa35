package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The workflow limits reach the engine from their flags and environment twins: the API refuses an
// input over --max-value-bytes (set here through CAIRN_MAX_VALUE_BYTES) naming the field, and a
// step starting more children than --max-children-per-step fails, saying which limit.
func TestWorkflowLimitFlags(t *testing.T) {
	t.Parallel()
	n := startNode(t, []string{"CAIRN_MAX_VALUE_BYTES=1000"}, "--database", "sqlite://cairn.db", "--demo", "--addr", "127.0.0.1:0",
		"--log-format", "json", "--max-children-per-step", "2")

	r := n.query(t, `mutation { startWorkflow(input: {type: "demo.order", input: {pad: "`+strings.Repeat("x", 2000)+`"}}) { workflow { id } } }`)
	requireRefused(t, r, 200, "INVALID_INPUT")
	require.Equal(t, "input", r.errors[0].Extensions["field"], r.raw)
	require.Contains(t, r.errors[0].Message, "--max-value-bytes")

	var started struct {
		StartWorkflow struct{ Workflow struct{ ID string } }
	}
	n.graphql(t, `mutation { startWorkflow(input: {type: "demo.fanout", input: {children: 3}}) { workflow { id } } }`, nil, &started)
	var got struct {
		Workflow struct {
			Status    string
			LastError *string
			Children  struct{ TotalCount int }
		}
	}
	waitFor(t, time.Minute, "the fan-out to fail", func() bool {
		n.graphql(t, `query($id: ID!) { workflow(id: $id) { status lastError children { totalCount } } }`,
			map[string]any{"id": started.StartWorkflow.Workflow.ID}, &got)
		return got.Workflow.Status == "MANUAL"
	})
	require.NotNil(t, got.Workflow.LastError)
	require.Contains(t, *got.Workflow.LastError, "--max-children-per-step")
	require.Zero(t, got.Workflow.Children.TotalCount)
}
