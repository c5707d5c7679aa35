package serverless_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// runToEnd deploys a document, runs it with input and returns the ended workflow, which must
// have finished.
func (n *node) runToEnd(t *testing.T, doc, input string) (*persistence.Workflow, map[string]any) {
	t.Helper()
	def := n.deploy(t, doc)
	w := n.waitEnded(t, n.start(t, def.Type, input).ID)
	require.Equal(t, persistence.StatusFinished, w.Status, "lastError: %s", lastError(w))
	out, _ := output(t, w).(map[string]any)
	return w, out
}

// checkDateTime checks a dateTimeDescriptor: its iso8601, epoch.seconds and epoch.milliseconds
// tell the same time, and that time is want (to the millisecond).
func checkDateTime(t *testing.T, v any, want time.Time) {
	t.Helper()
	d, ok := v.(map[string]any)
	require.True(t, ok, "a dateTimeDescriptor: %v", v)
	at, err := time.Parse(time.RFC3339Nano, d["iso8601"].(string))
	require.NoError(t, err)
	epoch := d["epoch"].(map[string]any)
	require.Equal(t, float64(at.Unix()), epoch["seconds"])
	require.Equal(t, float64(at.UnixMilli()), epoch["milliseconds"])
	require.Equal(t, want.UnixMilli(), at.UnixMilli(), "%s, want %s", at, want)
}

// TestArgWorkflow: $workflow is the running workflow's id, its document as parsed, its raw input
// (before input.from) and the time it started, the same in every step, in the workflow's
// input.from, a task's expressions and the workflow's output.as.
func TestArgWorkflow(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		n.startWorker(t)
		w, out := n.runToEnd(t, `
document: {dsl: '1.0.0', namespace: args, name: wf, version: '1.2.3'}
input:
  from: '${ .order + {fromInput: $workflow.input.order.id, idInFrom: $workflow.id} }'
do:
  - first:
      set:
        id: '${ $workflow.id }'
        name: '${ $workflow.definition.document.name }'
        version: '${ $workflow.definition.document.version }'
        firstTask: '${ $workflow.definition.do[0] | keys[0] }'
        setOfFirst: '${ $workflow.definition.do[0].first.set.id }'
        raw: '${ $workflow.input }'
        transformed: '${ . }'
        started: '${ $workflow.startedAt }'
  - pause:
      wait: {milliseconds: 50}
  - second:
      set: '${ . + {startedLater: $workflow.startedAt} }'
  - inBranch:
      fork:
        branches:
          - one: {set: '${ {branchID: $workflow.id, branchRaw: $workflow.input.extra, branchStarted: $workflow.startedAt} }'}
      output: {as: '${ $input + .[0] }'}
output:
  as: '${ . + {inOutput: $workflow.input.order.id} }'
`, `{"order": {"id": "o-7"}, "extra": 1}`)
		id := strconv.FormatInt(w.ID, 10)
		require.Equal(t, id, out["id"])
		require.Equal(t, "wf", out["name"])
		require.Equal(t, "1.2.3", out["version"])
		require.Equal(t, "first", out["firstTask"])
		require.Equal(t, "${ $workflow.id }", out["setOfFirst"], "the definition as written, not evaluated")
		require.Equal(t, map[string]any{"order": map[string]any{"id": "o-7"}, "extra": float64(1)}, out["raw"])
		require.Equal(t, map[string]any{"id": "o-7", "fromInput": "o-7", "idInFrom": id}, out["transformed"])
		require.Equal(t, "o-7", out["inOutput"])
		require.NotNil(t, w.Started)
		checkDateTime(t, out["started"], *w.Started)
		require.Equal(t, out["started"], out["startedLater"], "the same start in a later step")
		require.Equal(t, id, out["branchID"], "a fork's branch is part of its workflow")
		require.Equal(t, float64(1), out["branchRaw"])
		require.Equal(t, out["started"], out["branchStarted"])
	})
}

// TestArgTask: $task is the task's name, reference, definition, raw input (before input.from),
// raw output (before output.as) and the time it started, which a step that runs again (a wait's
// second run) reads as the first did; a composite task's are kept with it.
func TestArgTask(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		n.startWorker(t)
		_, out := n.runToEnd(t, `
document: {dsl: '1.0.0', namespace: args, name: task, version: '1.0.0'}
do:
  - mark:
      set: {t0: '${ now * 1000 | floor }', v: 1}
  - outer:
      input: {from: '${ {v: .v, t0: .t0, outerRaw: $task.input} }'}
      do:
        - pick:
            input: {from: '${ {v: (.v + 1), t0: .t0, rawInFrom: $task.input.v, nameInFrom: $task.name} }'}
            set:
              v: '${ .v * 10 }'
              t0: '${ .t0 }'
              tPick: '${ now * 1000 | floor }'
              rawInFrom: '${ .rawInFrom }'
              nameInFrom: '${ .nameInFrom }'
              name: '${ $task.name }'
              reference: '${ $task.reference }'
              definition: '${ $task.definition }'
              rawInput: '${ $task.input }'
              input: '${ $input }'
              outputInDefinition: '${ $task.output }'
            output:
              as: '${ . + {rawOutputV: $task.output.v, inputInAs: $input.v} }'
            export:
              as: '${ {exportedRaw: $task.output.v, exportedOutput: $output.rawOutputV} }'
        - nap:
            wait: {milliseconds: 300}
            output:
              as: '${ . + {napStarted: $task.startedAt.epoch.milliseconds, napEnded: (now * 1000 | floor), context: $context} }'
      output:
        as: '${ . + {outerName: $task.name, outerReference: $task.reference, outerRaw: $task.input, outerStarted: $task.startedAt.epoch.milliseconds, outerDefinitionKeys: ($task.definition | keys)} }'
`, `{}`)
		require.Equal(t, "pick", out["name"])
		require.Equal(t, "/do/1/outer/do/0/pick", out["reference"])
		def := out["definition"].(map[string]any)
		require.Equal(t, "${ .v * 10 }", def["set"].(map[string]any)["v"])
		require.Contains(t, def, "input")
		require.Contains(t, def, "export")
		require.Equal(t, float64(1), out["rawInput"].(map[string]any)["v"], "the raw input, before input.from")
		require.Equal(t, float64(1), out["rawInFrom"])
		require.Equal(t, "pick", out["nameInFrom"])
		require.Equal(t, float64(2), out["input"].(map[string]any)["v"], "$input: the transformed input")
		require.Nil(t, out["outputInDefinition"], "no output before the task has one")
		require.Equal(t, float64(20), out["rawOutputV"], "the raw output in output.as")
		require.Equal(t, float64(2), out["inputInAs"])
		require.Equal(t, map[string]any{"exportedRaw": float64(20), "exportedOutput": float64(20)}, out["context"])
		require.Equal(t, "outer", out["outerName"])
		require.Equal(t, "/do/1/outer", out["outerReference"])
		require.Equal(t, []any{"do", "input", "output"}, out["outerDefinitionKeys"])
		require.Equal(t, float64(1), out["outerRaw"].(map[string]any)["v"], "a composite task's raw input, kept")
		_, hasRaw := out["outerRaw"].(map[string]any)["outerRaw"]
		require.False(t, hasRaw, "the raw input is before input.from")

		// The step of mark entered outer, the step of pick entered nap, whose step ran twice (it
		// waited between): each time is read no later than a clock read after it in its step.
		t0, tPick := out["t0"].(float64), out["tPick"].(float64)
		outer, started, ended := out["outerStarted"].(float64), out["napStarted"].(float64), out["napEnded"].(float64)
		require.LessOrEqual(t, outer, t0, "outer started in the step of mark")
		require.GreaterOrEqual(t, started, outer)
		require.LessOrEqual(t, started, tPick, "the wait started when the step of pick entered it")
		require.GreaterOrEqual(t, ended-started, 300.0, "its second run reads the start the step before stored")
	})
}

// TestArgRuntime: $runtime is cairn's name, the version the node was given (or its module's)
// and the node's metadata.
func TestArgRuntime(t *testing.T) {
	t.Parallel()
	doc := `
document: {dsl: '1.0.0', namespace: args, name: rt, version: '1.0.0'}
input:
  from: '${ {inFrom: $runtime.name} }'
do:
  - a: {set: '${ . + {runtime: $runtime} }'}
output:
  as: '${ . + {inOutput: $runtime.version} }'
`
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNodeWith(t, store, serverless.Options{Runtime: serverless.RuntimeOptions{Version: "v9.8.7", Metadata: map[string]any{"region": "eu", "tier": 2}}})
		n.startWorker(t)
		_, out := n.runToEnd(t, doc, `{}`)
		require.Equal(t, map[string]any{"name": "cairn", "version": "v9.8.7", "metadata": map[string]any{"region": "eu", "tier": float64(2)}}, out["runtime"])
		require.Equal(t, "cairn", out["inFrom"])
		require.Equal(t, "v9.8.7", out["inOutput"])
	})
	n := newNode(t, dbtest.Open(t, persistence.KindSQLite))
	n.startWorker(t)
	_, out := n.runToEnd(t, doc, `{}`)
	require.Equal(t, map[string]any{"name": "cairn", "version": serverless.DefaultRuntimeVersion(), "metadata": map[string]any{}}, out["runtime"])
	require.NotEmpty(t, serverless.DefaultRuntimeVersion())
}

// TestArgSecrets: $secrets holds the node's secrets in every expression the spec lists it for,
// and $secret is the same map.
func TestArgSecrets(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNodeWith(t, store, serverless.Options{Secrets: map[string]any{"api": map[string]any{"retries": 3, "flag": true}}})
		n.startWorker(t)
		_, out := n.runToEnd(t, `
document: {dsl: '1.0.0', namespace: args, name: secrets, version: '1.0.0'}
input:
  from: '${ {inFrom: $secrets.api.retries} }'
do:
  - a:
      if: '${ $secrets.api.flag }'
      set: '${ . + {spelled: $secrets.api.retries, alias: $secret.api.retries, same: ($secrets == $secret)} }'
      export: {as: '${ {exported: $secrets.api.retries} }'}
output:
  as: '${ . + {inOutput: $secrets.api.retries, context: $context} }'
`, `{}`)
		require.Equal(t, map[string]any{"inFrom": float64(3), "spelled": float64(3), "alias": float64(3), "same": true,
			"inOutput": float64(3), "context": map[string]any{"exported": float64(3)}}, out)
	})
}

// TestArgContextInputOutput: $input is the task's transformed input, $output the transformed
// output in export.as, whose result is $context; and each expression may use only the arguments
// the spec's table gives it: any other is refused at deploy at the expression's pointer.
func TestArgContextInputOutput(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		n.startWorker(t)
		_, out := n.runToEnd(t, `
document: {dsl: '1.0.0', namespace: args, name: data, version: '1.0.0'}
do:
  - a:
      input: {from: '${ {x: (.x + 1)} }'}
      set: {input: '${ $input }', x: '${ .x * 10 }'}
      output: {as: '${ {x: (.x + 1), inputInAs: $input.x} }'}
      export: {as: '${ $context + {output: $output, input: $input} }'}
  - b:
      if: '${ $context.output.x == 31 }'
      set: '${ . + {context: $context} }'
`, `{"x": 2}`)
		require.Equal(t, map[string]any{"x": float64(31), "inputInAs": float64(3),
			"context": map[string]any{"output": map[string]any{"x": float64(31), "inputInAs": float64(3)}, "input": map[string]any{"x": float64(3)}}}, out)

		refused := []struct{ name, doc, field string }{
			{"$input in if", header + "do:\n  - a: {if: '${ $input.x }', set: {x: 1}}\n", "/do/0/a/if"},
			{"$input in input.from", header + "do:\n  - a: {input: {from: '${ $input }'}, set: {x: 1}}\n", "/do/0/a/input/from"},
			{"$output in output.as", header + "do:\n  - a: {set: {x: 1}, output: {as: '${ $output }'}}\n", "/do/0/a/output/as"},
			{"$output in the definition", header + "do:\n  - a: {set: {x: '${ $output }'}}\n", "/do/0/a/set/x"},
			{"$context in the workflow's input.from", header + "input: {from: '${ $context }'}\ndo:\n  - a: {set: {x: 1}}\n", "/input/from"},
			{"$task in the workflow's output.as", header + "do:\n  - a: {set: {x: 1}}\noutput: {as: '${ $task }'}\n", "/output/as"},
			{"$input in the workflow's output.as", header + "do:\n  - a: {set: {x: 1}}\noutput: {as: '${ $input }'}\n", "/output/as"},
		}
		for _, tc := range refused {
			t.Run(tc.name, func(t *testing.T) {
				_, err := n.engine.Deploy(context.Background(), tc.doc, "")
				var we *workflow.Error
				require.ErrorAs(t, err, &we, "%v", err)
				require.Equal(t, workflow.CodeInvalidInput, we.Code, "%v", err)
				require.Equal(t, tc.field, we.Field, "%v", err)
			})
		}
	})
}
