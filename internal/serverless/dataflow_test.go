package serverless_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// TestExportSchemaAndSetExpression: set may be one runtime expression; export.schema checks the
// context a task exports (or keeps): a match goes on, a mismatch faults the task with the
// validation error, which a try can catch.
func TestExportSchemaAndSetExpression(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		n.startWorker(t)
		_, out := n.runToEnd(t, `
document: {dsl: '1.0.0', namespace: flow, name: exported, version: '1.0.0'}
do:
  - whole:
      set: '${ {total: (.items | add), count: (.items | length)} }'
      export:
        as: '${ {total: .total} }'
        schema: {format: json, document: {type: object, required: [total], properties: {total: {type: number}}}}
  - kept:
      set: '${ . + {seen: $context.total} }'
      export:
        schema: {document: {type: object, required: [total]}}
  - guarded:
      try:
        - bad:
            set: {x: 1}
            export:
              as: '${ {total: "many"} }'
              schema: {document: {type: object, properties: {total: {type: number}}}}
      catch:
        as: err
        do:
          - note:
              set: '${ {caught: {type: $err.type, status: $err.status, title: $err.title, instance: $err.instance}, context: $context} }'
  - keptBad:
      try:
        - check:
            set: '${ . }'
            export: {schema: {document: {type: object, required: [missing]}}}
      catch:
        do:
          - note:
              set: '${ . + {caughtToo: $error.instance} }'
`, `{"items": [1, 2, 3]}`)
		require.Equal(t, map[string]any{
			"caught": map[string]any{"type": "https://serverlessworkflow.io/spec/1.0.0/errors/validation", "status": float64(400),
				"title": "Invalid Context", "instance": "/do/2/guarded/try/0/bad"},
			"context":   map[string]any{"total": float64(6)},
			"caughtToo": "/do/3/keptBad/try/0/check",
		}, out, "the faulted export left the context as it was")

		def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: flow, name: unexported, version: '1.0.0'}
do:
  - a:
      set: {x: 1}
      export: {schema: {document: {type: object, required: [needed]}}}
`)
		w := n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
		require.Equal(t, persistence.StatusFailed, w.Status)
		p := serverless.ProblemOf(w)
		require.NotNil(t, p, lastError(w))
		require.Equal(t, "https://serverlessworkflow.io/spec/1.0.0/errors/validation", p.Type)
		require.Equal(t, 400, p.Status)
		require.Equal(t, "/do/0/a", p.Instance)
		require.Contains(t, p.Detail, "needed")
	})
}
