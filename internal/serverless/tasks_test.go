package serverless_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// taskCase is a document run to its end through the real engine and worker.
type taskCase struct {
	name   string
	doc    string
	input  string
	output string // YAML of the expected output ("" when it faults)
	fault  string // YAML of the expected Problem Details' fields
}

var taskCases = []taskCase{
	{name: "set", doc: `
document: {dsl: '1.0.0', namespace: test, name: set, version: '1.0.0'}
do:
  - greet:
      set:
        greeting: '${ "hello " + .name }'
        fixed: 1
`, input: `{"name":"ada"}`, output: `{greeting: hello ada, fixed: 1}`},
	{name: "do with then end and named", doc: `
document: {dsl: '1.0.0', namespace: test, name: flow, version: '1.0.0'}
do:
  - first:
      set: {colors: '${ .colors + ["red"] }'}
      then: third
  - second:
      set: {colors: '${ .colors + ["never"] }'}
  - third:
      do:
        - inner:
            set: {colors: '${ .colors + ["green"] }'}
            then: exit
        - skipped:
            set: {colors: '${ .colors + ["never"] }'}
      then: fourth
  - fourth:
      set: {colors: '${ .colors + ["blue"] }'}
      then: end
  - fifth:
      set: {colors: '${ .colors + ["never"] }'}
`, input: `{}`, output: `{colors: [red, green, blue]}`},
	{name: "switch default", doc: `
document: {dsl: '1.0.0', namespace: test, name: switch, version: '1.0.0'}
do:
  - pick:
      switch:
        - big: {when: '.size > 10', then: big}
        - other: {then: small}
  - big:
      set: {size: big}
      then: end
  - small:
      set: {size: small}
`, input: `{"size": 3}`, output: `{size: small}`},
	{name: "for with index and while", doc: `
document: {dsl: '1.0.0', namespace: test, name: for, version: '1.0.0'}
do:
  - loop:
      for: {each: c, in: .colors, at: i}
      while: '$i < 2'
      do:
        - mark:
            set: {seen: '${ .seen + [ "\($i):\($c)" ] }'}
`, input: `{"colors":["red","green","blue"]}`, output: `{seen: ["0:red", "1:green"]}`},
	{name: "data flow", doc: `
document: {dsl: '1.0.0', namespace: test, name: data, version: '1.0.0'}
input:
  from: .order
do:
  - price:
      input: {from: .items}
      set: {total: '${ map(.price) | add }'}
      export: {as: '{ total: .total }'}
  - label:
      set: {line: '${ "total " + ($context.total | tostring) + " for " + ($workflow.input.order.id) }'}
      output: {as: .line}
output:
  as: '{ result: . }'
`, input: `{"order":{"id":"o-1","items":[{"price":2},{"price":3}]}}`, output: `{result: total 5 for o-1}`},
	{name: "if skips a task", doc: `
document: {dsl: '1.0.0', namespace: test, name: cond, version: '1.0.0'}
do:
  - maybe:
      if: .run
      set: {ran: true}
  - after:
      set: {done: true, ran: '${ .ran }'}
`, input: `{"run": false}`, output: `{done: true, ran: null}`},
	{name: "raise faults with problem details", doc: `
document: {dsl: '1.0.0', namespace: test, name: raise, version: '1.0.0'}
do:
  - check:
      raise:
        error:
          type: https://example.com/errors/bad
          status: 422
          title: Bad Order
          detail: '${ "order " + .id + " is bad" }'
`, input: `{"id":"o-9"}`, fault: `{type: "https://example.com/errors/bad", status: 422, title: Bad Order, detail: order o-9 is bad, instance: /do/0/check}`},
	{name: "try catch runs catch do", doc: `
document: {dsl: '1.0.0', namespace: test, name: catch, version: '1.0.0'}
use:
  errors:
    denied: {type: https://example.com/errors/denied, status: 403}
do:
  - guarded:
      try:
        - deny:
            raise: {error: denied}
      catch:
        errors: {with: {status: 403}}
        as: err
        do:
          - recover:
              set: {recovered: '${ $err.instance }', status: '${ $err.status }'}
  - after:
      set: {recovered: '${ .recovered }', status: '${ .status }', after: true}
`, input: `{}`, output: `{recovered: /do/0/guarded/try/0/deny, status: 403, after: true}`},
	{name: "try catch not matching faults", doc: `
document: {dsl: '1.0.0', namespace: test, name: nocatch, version: '1.0.0'}
do:
  - guarded:
      try:
        - deny:
            raise: {error: {type: https://example.com/errors/denied, status: 403}}
      catch:
        errors: {with: {status: 500}}
`, input: `{}`, fault: `{type: "https://example.com/errors/denied", status: 403, instance: /do/0/guarded/try/0/deny}`},
	{name: "try retries then succeeds", doc: `
document: {dsl: '1.0.0', namespace: test, name: retry, version: '1.0.0'}
do:
  - guarded:
      try:
        - count:
            set: {tries: '${ ($context.tries // 0) + 1 }'}
            export: {as: '{ tries: .tries }'}
        - flaky:
            if: '$context.tries < 3'
            raise: {error: {type: https://example.com/errors/flaky, status: 503}}
      catch:
        errors: {with: {status: 503}}
        retry:
          delay: {milliseconds: 10}
          backoff: {exponential: {}}
          limit: {attempt: {count: 5}}
  - done:
      set: {attempts: '${ $context.tries }'}
`, input: `{}`, output: `{attempts: 3}`},
	{name: "retry exhausted faults", doc: `
document: {dsl: '1.0.0', namespace: test, name: exhausted, version: '1.0.0'}
do:
  - guarded:
      try:
        - fail:
            raise: {error: {type: https://example.com/errors/flaky, status: 503}}
      catch:
        errors: {with: {status: 503}}
        retry: {delay: {milliseconds: 10}, limit: {attempt: {count: 2}}}
        do:
          - giveUp:
              raise: {error: {type: https://example.com/errors/gave-up, status: 500, title: Gave Up}}
`, input: `{}`, fault: `{type: "https://example.com/errors/gave-up", status: 500, title: Gave Up, instance: /do/0/guarded/catch/do/0/giveUp}`},
	{name: "expression failing at run time faults", doc: `
document: {dsl: '1.0.0', namespace: test, name: badexpr, version: '1.0.0'}
do:
  - boom:
      set: {x: '${ .a + 1 }'}
`, input: `{"a":"text"}`, fault: `{type: "https://serverlessworkflow.io/spec/1.0.0/errors/expression", status: 400, title: Expression Error, instance: /do/0/boom}`},
	{name: "input schema refuses the input", doc: `
document: {dsl: '1.0.0', namespace: test, name: inschema, version: '1.0.0'}
input:
  schema:
    format: json
    document: {type: object, required: [id], properties: {id: {type: string}}}
do:
  - a: {set: {ok: true}}
`, input: `{"id": 7}`, fault: `{type: "https://serverlessworkflow.io/spec/1.0.0/errors/validation", status: 400, title: Invalid Input, instance: /input/schema}`},
	{name: "schemas accept good data", doc: `
document: {dsl: '1.0.0', namespace: test, name: schemas, version: '1.0.0'}
input:
  schema: {document: {type: object, required: [id]}}
output:
  schema: {document: {type: object, required: [done]}}
do:
  - a:
      input: {schema: {document: {type: object}}}
      output: {schema: {document: {type: object, required: [id]}}}
      set: {id: '${ .id }'}
  - b: {set: {done: '${ .id }'}}
`, input: `{"id": "x"}`, output: `{done: x}`},
	{name: "task output schema faults the task", doc: `
document: {dsl: '1.0.0', namespace: test, name: outschema, version: '1.0.0'}
do:
  - a:
      output: {schema: {document: {type: object, required: [missing]}}}
      set: {id: 1}
`, input: `{}`, fault: `{type: "https://serverlessworkflow.io/spec/1.0.0/errors/validation", status: 400, title: Invalid Output, instance: /do/0/a}`},
	{name: "wait", doc: `
document: {dsl: '1.0.0', namespace: test, name: wait, version: '1.0.0'}
do:
  - pause:
      wait: {milliseconds: 200}
  - after:
      set: {waited: true}
`, input: `{}`, output: `{waited: true}`},
	{name: "emit", doc: `
document: {dsl: '1.0.0', namespace: test, name: emit, version: '1.0.0'}
do:
  - tell:
      emit:
        event:
          with:
            source: https://example.com
            type: com.example.greeted
            data: {greeting: '${ "hi " + .name }'}
      output: {as: '{ type: .type, source: .source, data: .data, hasID: (.id != null), specversion: .specversion }'}
`, input: `{"name":"bo"}`, output: `{type: com.example.greeted, source: "https://example.com", data: {greeting: hi bo}, hasID: true, specversion: "1.0"}`},
}

// TestTasksRunToCompletion runs a document of each supported task type through the real engine
// and worker, on every backend, and checks its output or its fault.
func TestTasksRunToCompletion(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		n.startWorker(t)
		for _, tc := range taskCases {
			t.Run(tc.name, func(t *testing.T) {
				def := n.deploy(t, tc.doc)
				w := n.waitEnded(t, n.start(t, def.Type, tc.input).ID)
				if tc.fault != "" {
					require.Equal(t, persistence.StatusFailed, w.Status, "lastError: %s", lastError(w))
					var got, want map[string]any
					require.NoError(t, json.Unmarshal([]byte(lastError(w)), &got))
					require.NoError(t, yaml.Unmarshal([]byte(tc.fault), &want))
					if _, ok := want["detail"]; !ok {
						delete(got, "detail")
					}
					require.Equal(t, want, got)
					return
				}
				require.Equal(t, persistence.StatusFinished, w.Status, "lastError: %s", lastError(w))
				var want any
				require.NoError(t, yaml.Unmarshal([]byte(tc.output), &want))
				require.Equal(t, want, output(t, w))
			})
		}
	})
}
