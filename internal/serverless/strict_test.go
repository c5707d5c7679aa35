package serverless_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// TestDeployRefusesUnknownKeys: thn: end, outptu: {as: .x} and while: inside for: deployed with
// created: true and were ignored; an unquoted n: became the key "false". Each is refused with
// INVALID_INPUT at its pointer, and nothing is stored.
func TestDeployRefusesUnknownKeys(t *testing.T) {
	t.Parallel()
	tryRetry := "do:\n  - a:\n      try:\n        - b: {set: {x: 1}}\n      catch: {retry: {delay: PT1S, limit: {attempt: {count: 2}}, %s}}\n"
	cases := []struct{ name, doc, field, message string }{
		{"misspelt then", header + "do:\n  - a: {set: {x: 1}, thn: end}\n  - b: {set: {x: 2}}\n", "/do/0/a/thn", `unknown key "thn" in a set task`},
		{"misspelt output", header + "do:\n  - a: {set: {x: 1}, outptu: {as: .x}}\n", "/do/0/a/outptu", `unknown key "outptu"`},
		{"while inside for", header + "do:\n  - l:\n      for: {each: c, in: .xs, while: '${ $c < 3 }'}\n      do:\n        - a: {set: {x: 1}}\n", "/do/0/l/for/while", `unknown key "while" in a for (it may have at, each, in)`},
		{"two kinds in one task", header + "do:\n  - a: {set: {x: 1}, wait: PT1S}\n", "/do/0/a/wait", `unknown key "wait" in a set task`},
		{"nested task", header + "do:\n  - outer:\n      do:\n        - inner: {set: {x: 1}, iff: .x}\n", "/do/0/outer/do/0/inner/iff", `unknown key "iff"`},
		{"document root", header + "tiemout: {after: PT1S}\ndo:\n  - a: {set: {x: 1}}\n", "/tiemout", `unknown key "tiemout" in a workflow document`},
		{"document metadata", "document: {dsl: '1.0.0', namespace: test, name: bad, version: '1.0.0', titel: x}\ndo:\n  - a: {set: {x: 1}}\n", "/document/titel", `unknown key "titel" in a document`},
		{"task output", header + "do:\n  - a: {set: {x: 1}, output: {ass: .x}}\n", "/do/0/a/output/ass", `unknown key "ass" in a output`},
		{"catch", header + "do:\n  - a:\n      try:\n        - b: {set: {x: 1}}\n      catch: {errors: {with: {status: 500}}, ass: e}\n", "/do/0/a/catch/ass", `unknown key "ass" in a catch`},
		{"retry", header + fmt.Sprintf(tryRetry, "dealy: PT2S"), "/do/0/a/catch/retry/dealy", `unknown key "dealy" in a retry policy`},
		{"named retry", header + "use:\n  retries:\n    r: {delay: PT1S, limit: {attempt: {count: 2, cuont: 3}}}\ndo:\n  - a: {set: {x: 1}}\n", "/use/retries/r/limit/attempt/cuont", `unknown key "cuont"`},
		{"run workflow", header + "do:\n  - a: {run: {workflow: {namespace: lib, name: child, version: '1.0.0', inptu: {}}}}\n", "/do/0/a/run/workflow/inptu", `unknown key "inptu" in a run: workflow`},
		{"http with", header + "do:\n  - a: {call: http, with: {method: get, endpoint: 'https://example.com', header: {a: b}}}\n", "/do/0/a/with/header", `unknown key "header" in a call: http with`},
		{"switch case", header + "do:\n  - a:\n      switch:\n        - one: {when: .x, then: end, than: exit}\n", "/do/0/a/switch/0/one/than", `unknown key "than" in a switch case`},
		{"timeout", header + "do:\n  - a: {set: {x: 1}, timeout: {after: PT1S, before: PT2S}}\n", "/do/0/a/timeout/before", `unknown key "before" in a timeout`},
	}
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		for _, tc := range cases {
			_, err := n.engine.Deploy(context.Background(), tc.doc, "")
			var we *workflow.Error
			require.ErrorAs(t, err, &we, tc.name)
			require.Equal(t, workflow.CodeInvalidInput, we.Code, tc.name)
			require.Equal(t, tc.field, we.Field, "%s: %v", tc.name, err)
			require.Contains(t, we.Message, tc.message, tc.name)
		}
		defs, err := store.DefinitionList(context.Background(), persistence.DefinitionListParams{})
		require.NoError(t, err)
		require.Empty(t, defs, "a refused document stores nothing")

		// Quoted, the same keys are plain strings; every kind of task with its keys deploys.
		n.deploy(t, header+`do:
  - a: {set: {'n': 1, "yes": 2}, then: b}
  - b:
      for: {each: c, in: '${ [1, 2] }', at: i}
      while: '${ $c < 3 }'
      do:
        - c: {set: {x: 1}, if: '${ true }', input: {from: .}, output: {as: .}, export: {as: .}, timeout: {after: PT1M}, metadata: {k: v}}
  - d:
      try:
        - e: {wait: PT0S}
      catch:
        errors: {with: {status: 500}}
        as: err
        when: '${ true }'
        retry: {delay: PT1S, backoff: {exponential: {}}, jitter: {from: PT0S, to: PT1S}, limit: {attempt: {count: 2}, duration: PT1M}}
        do:
          - f: {set: {z: 1}}
  - g:
      switch:
        - one: {when: .x, then: end}
        - other: {then: continue}
  - h: {raise: {error: {type: https://example.com/e, status: 400, title: T, detail: D, instance: /h}}, if: .never}
`)
	})
}
