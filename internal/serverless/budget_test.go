package serverless_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

const (
	problemRuntime = "https://serverlessworkflow.io/spec/1.0.0/errors/runtime"
	problemTimeout = "https://serverlessworkflow.io/spec/1.0.0/errors/timeout"
)

// runHog deploys a document whose one set task evaluates expr, runs it and returns its Problem.
func runHog(t *testing.T, n *node, name, expr string) *serverless.Problem {
	t.Helper()
	n.deploy(t, fmt.Sprintf("document: {dsl: '1.0.0', namespace: budget, name: %s, version: '1.0.0'}\ndo:\n  - hog: {set: {count: '${ %s }'}}\n", name, expr))
	w := n.waitEnded(t, n.start(t, "budget."+name, `{}`).ID)
	require.Equal(t, persistence.StatusFailed, w.Status, name)
	p := serverless.ProblemOf(w)
	require.NotNil(t, p, lastError(w))
	require.Equal(t, "/do/0/hog", p.Instance)
	return p
}

// TestExpressionOverMemoryBudgetFaultsTheTask: [range(1e9)] grew a node to 11.9 GB; it is stopped
// once the heap grew by the budget and faults its task with the DSL's runtime error, which a try
// catches like any other; the workflow then goes on.
func TestExpressionOverMemoryBudgetFaultsTheTask(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		// A time budget far past what the memory budget takes, so memory is what stops it.
		n := newNodeWith(t, store, serverless.Options{Expressions: serverless.ExpressionOptions{Timeout: 5 * time.Minute, MaxBytes: 16 << 20}})
		n.startWorker(t)
		p := runHog(t, n, "memory", "[range(1e9)] | length")
		require.Equal(t, problemRuntime, p.Type, p.String())
		require.Equal(t, 500, p.Status)
		require.Equal(t, "the expression grew the node's memory by more than its budget of 16 MB", p.Detail)

		n.deploy(t, `document: {dsl: '1.0.0', namespace: budget, name: caught, version: '1.0.0'}
do:
  - guard:
      try:
        - hog: {set: {count: '${ [range(1e9)] | length }'}}
      catch:
        errors: {with: {type: https://serverlessworkflow.io/spec/1.0.0/errors/runtime}}
        as: e
        do:
          - note: {set: {caught: '${ $e.title }'}}
  - after: {set: {caught: '${ .caught }', sum: '${ [range(1000)] | add }'}}
`)
		w := n.waitEnded(t, n.start(t, "budget.caught", `{}`).ID)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.Equal(t, map[string]any{"caught": "Expression Out of Memory", "sum": float64(499500)}, output(t, w))
	})
}

// TestExpressionOverTimeBudgetFaultsTheTask: until(false; .) and def f: f; f held a core for a
// minute per attempt; each is stopped at the time budget and faults its task with the DSL's
// timeout error.
func TestExpressionOverTimeBudgetFaultsTheTask(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNodeWith(t, store, serverless.Options{Expressions: serverless.ExpressionOptions{Timeout: 200 * time.Millisecond}})
		n.startWorker(t)
		for name, expr := range map[string]string{"loop": "until(false; .)", "recursion": "def f: f; f"} {
			p := runHog(t, n, name, expr)
			require.Equal(t, problemTimeout, p.Type, p.String())
			require.Equal(t, 408, p.Status)
			require.Equal(t, "the expression ran longer than its budget of 200ms", p.Detail)
		}
	})
}

// TestExpressionValueOverBudgetFaultsTheTask: reduce range(40) as $i (1; [., .]) takes a few KB
// while it is evaluated, its parts shared, and 2^40 leaves as JSON, which the engine encodes to
// store the task's output, and tojson, flatten or an interpolation writes out in one instruction;
// .[134217727] = 1 and setpath fill a 2 GB array in one instruction. Each faults the task with the
// runtime Problem instead.
func TestExpressionValueOverBudgetFaultsTheTask(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		n.startWorker(t)
		for name, expr := range map[string]string{
			"shared":       "reduce range(40) as $i (1; [., .])",
			"tojson":       "reduce range(40) as $i (1; [., .]) | tojson | length",
			"interpolated": `reduce range(40) as $i (1; [., .]) | "\(.)" | length`,
			"flatten":      "reduce range(40) as $i (1; [., .]) | flatten | length",
		} {
			p := runHog(t, n, name, expr)
			require.Equal(t, problemRuntime, p.Type, p.String())
			require.Equal(t, "a value of the expression would take more than its budget of 128 MB as JSON", p.Detail, name)
		}
		for name, expr := range map[string]string{"index": "null | .[134217727] = 1 | length", "setpath": "null | setpath([134217727]; 1) | length"} {
			p := runHog(t, n, name, expr)
			require.Equal(t, problemRuntime, p.Type, p.String())
			require.Equal(t, "the array index 134217727 would make an array larger than the expression's budget of 128 MB", p.Detail, name)
		}
	})
}
