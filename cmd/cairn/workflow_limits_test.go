package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The workflow limits reach the engine from their flags and environment twins: the API refuses an
// input over --max-value-bytes (set here through CAIRN_MAX_VALUE_BYTES) naming the field, a step
// starting more children than --max-children-per-step fails, saying which limit, and a document
// that loops for ever fails after --max-steps steps (run on one claim, step after step).
func TestWorkflowLimitFlags(t *testing.T) {
	t.Parallel()
	defs := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(defs, "loop.yaml"), []byte("document: {dsl: '1.0.0', namespace: t, name: loop, version: '1.0.0'}\n"+
		"do:\n  - a: {set: {count: 1}, then: a}\n"), 0o600))
	n := startNode(t, []string{"CAIRN_MAX_VALUE_BYTES=1000"}, "--database", "sqlite://cairn.db", "--demo", "--addr", "127.0.0.1:0",
		"--log-format", "json", "--max-children-per-step", "2", "--max-steps", "50", "--definitions", defs)

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

	n.graphql(t, `mutation { startWorkflow(input: {type: "t.loop"}) { workflow { id } } }`, nil, &started)
	var loop struct {
		Workflow struct {
			Status, State string
			LastError     *string
			TaskInstances struct{ TotalCount int }
		}
	}
	waitFor(t, time.Minute, "the loop to fail", func() bool {
		n.graphql(t, `query($id: ID!) { workflow(id: $id) { status state lastError taskInstances { totalCount } } }`,
			map[string]any{"id": started.StartWorkflow.Workflow.ID}, &loop)
		return loop.Workflow.Status == "FAILED"
	})
	require.Equal(t, "fault", loop.Workflow.State)
	require.Contains(t, *loop.Workflow.LastError, "--max-steps")
	require.Equal(t, 51, loop.Workflow.TaskInstances.TotalCount, "50 steps, then the one that failed it")
}
