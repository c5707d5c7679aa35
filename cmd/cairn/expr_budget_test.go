package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// peakRSSMB is a process's peak resident memory (VmHWM), in MB.
func peakRSSMB(t *testing.T, pid int) int {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" {
			kb, err := strconv.Atoi(f[1])
			require.NoError(t, err)
			return kb >> 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// startType starts a workflow of typ through GraphQL and returns its ID.
func (n *node) startType(t *testing.T, typ string) string {
	t.Helper()
	return n.startWith(t, typ, map[string]any{})
}

// startWith starts a workflow of typ with input through GraphQL and returns its ID.
func (n *node) startWith(t *testing.T, typ string, input map[string]any) string {
	t.Helper()
	var started struct {
		StartWorkflow struct{ Workflow struct{ ID string } }
	}
	n.graphql(t, `mutation($input: StartWorkflowInput!) { startWorkflow(input: $input) { workflow { id } } }`,
		map[string]any{"input": map[string]any{"type": typ, "input": input}}, &started)
	return started.StartWorkflow.Workflow.ID
}

// finishedOutput waits up to a minute for a workflow to finish and returns its output.
func (n *node) finishedOutput(t *testing.T, id string) map[string]any {
	t.Helper()
	var got struct {
		Workflow struct {
			Status string
			Output map[string]any
		}
	}
	waitFor(t, time.Minute, "workflow "+id+" finished", func() bool {
		n.graphql(t, `query($id: ID!) { workflow(id: $id) { status output } }`, map[string]any{"id": id}, &got)
		return got.Workflow.Status == "FINISHED"
	})
	return got.Workflow.Output
}

// waitStatus waits for a workflow to reach status and returns its problem (lastError).
func (n *node) waitStatus(t *testing.T, id, status string) map[string]any {
	t.Helper()
	var got struct {
		Workflow struct {
			Status    string
			LastError *string
		}
	}
	waitFor(t, 3*time.Minute, "workflow "+id+" "+status, func() bool {
		n.graphql(t, `query($id: ID!) { workflow(id: $id) { status lastError } }`, map[string]any{"id": id}, &got)
		return got.Workflow.Status == status
	})
	var problem map[string]any
	if got.Workflow.LastError != nil {
		_ = json.Unmarshal([]byte(*got.Workflow.LastError), &problem)
	}
	return problem
}

func (n *node) deployHog(t *testing.T, name, expr string) {
	t.Helper()
	var deployed struct{ DeployDefinition struct{ Created bool } }
	n.graphql(t, deployMutation, map[string]any{"source": fmt.Sprintf(
		"document: {dsl: '1.0.0', namespace: hog, name: %s, version: '1.0.0'}\ndo:\n  - hog: {set: {count: '${ %s }'}}\n", name, expr)}, &deployed)
}

// TestExpressionBudgetProtectsTheNode: `[range(1e9)] | length` grew a node to 11.9 GB and killed
// it on every claim; until(false; .) and def f: f; f held a core a minute per attempt and, four at
// once, delayed a demo.order by 58 s. Against the real binary, each (and a string doubled in a
// loop) faults its workflow with the
// DSL's runtime (memory) or timeout Problem, the node's peak RSS stays a few hundred MB, and a
// demo.order started alongside finishes.
func TestExpressionBudgetProtectsTheNode(t *testing.T) {
	t.Parallel()
	// The race detector multiplies memory (its shadow) and slows jq tenfold.
	maxRSS := 400
	if raceEnabled {
		maxRSS = 1500
	}
	for _, kind := range []persistence.Kind{persistence.KindSQLite, persistence.KindPostgres} {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			url := dbtest.URL(t, kind)
			args := []string{"--database", url, "--demo", "--addr", "127.0.0.1:0", "--log-format", "json", "--concurrency", "4", "--poll-interval", "100ms"}

			// Memory: a time budget far past what the default memory budget takes to reach.
			n := startNode(t, nil, append(args, "--expression-timeout", "10m")...)
			n.deployHog(t, "memory", "[range(1e9)] | length")
			// Doubling a string per instruction outruns any count of instructions between readings.
			n.deployHog(t, "doubling", `"x" * 1e7 | until(length > 1e12; . + .) | length`)
			hogs := []string{n.startType(t, "hog.memory"), n.startType(t, "hog.memory"), n.startType(t, "hog.doubling")}
			order := n.startType(t, "demo.order")
			for _, id := range hogs {
				p := n.waitStatus(t, id, "FAILED")
				require.Equal(t, "https://serverlessworkflow.io/spec/1.0.0/errors/runtime", p["type"], p)
				require.Equal(t, "Expression Out of Memory", p["title"], p)
			}
			n.waitStatus(t, order, "FINISHED")
			rss := peakRSSMB(t, n.cmd.Process.Pid)
			t.Logf("%s: peak RSS %d MB after two [range(1e9)] and a doubling string on a node of --concurrency 4", kind, rss)
			require.Less(t, rss, maxRSS)
			require.Zero(t, n.stop(t), n.output())

			// Time: the default budget, with four endless expressions at once on four slots.
			n = startNode(t, nil, args...)
			n.deployHog(t, "loop", "until(false; .)")
			n.deployHog(t, "recursion", "def f: f; f")
			hogs = []string{n.startType(t, "hog.loop"), n.startType(t, "hog.recursion"), n.startType(t, "hog.loop"), n.startType(t, "hog.recursion")}
			order = n.startType(t, "demo.order")
			for _, id := range hogs {
				p := n.waitStatus(t, id, "FAILED")
				require.Equal(t, "https://serverlessworkflow.io/spec/1.0.0/errors/timeout", p["type"], p)
				require.Equal(t, "the expression ran longer than its budget of 2s", p["detail"], p)
			}
			n.waitStatus(t, order, "FINISHED")
			require.Zero(t, n.stop(t), n.output())
		})
	}
}
