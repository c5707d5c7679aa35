package serverless_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// TestFork runs fork tasks: every branch is a child workflow of the same definition version, the
// parent waits for them and takes their outputs in declared order; a branch that faults faults
// the fork (a try around it catches it); with compete, the first branch to finish wins and the
// others are cancelled.
func TestFork(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		n.startWorker(t)

		t.Run("all branches, in declared order", func(t *testing.T) {
			def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: test, name: fork-all, version: '1.0.0'}
do:
  - each:
      for: {each: item, in: .items}
      do:
        - fan:
            fork:
              branches:
                - double:
                    set: {v: '${ $item * 2 }'}
                - steps:
                    do:
                      - one: {set: {v: '${ $item + 1 }'}}
                      - two: {set: {v: '${ .v * 10 }', ctx: '${ $context.tag }'}}
                - square:
                    set: {v: '${ $item * $item }'}
            output:
              as: '$input + {results: ((($input.results) // []) + [map(.v)])}'
  - done:
      set: {results: '${ .results }'}
`)
			w := n.waitEnded(t, n.start(t, def.Type, `{"items":[2,3]}`).ID)
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			require.Equal(t, map[string]any{"results": []any{
				[]any{float64(4), float64(30), float64(4)},
				[]any{float64(6), float64(40), float64(9)},
			}}, output(t, w))
			children := childrenOf(t, store, w.ID)
			require.Len(t, children, 6, "one child workflow per branch and run of the fork")
			for _, c := range children {
				require.Equal(t, persistence.StatusFinished, c.Status)
				require.Equal(t, w.DefinitionVersion, c.DefinitionVersion)
				require.Equal(t, def.Type, c.Type)
			}
		})

		t.Run("nested forks and then end in a branch", func(t *testing.T) {
			def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: test, name: fork-nested, version: '1.0.0'}
do:
  - outer:
      fork:
        branches:
          - inner:
              fork:
                branches:
                  - a: {set: {v: a}}
                  - b: {set: {v: b}}
          - early:
              do:
                - stop: {set: {v: early}, then: end}
                - never: {set: {v: never}}
  - after:
      set: {got: '${ . }'}
`)
			w := n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			require.Equal(t, map[string]any{"got": []any{
				[]any{map[string]any{"v": "a"}, map[string]any{"v": "b"}},
				map[string]any{"v": "early"},
			}}, output(t, w))
		})

		t.Run("a branch that faults faults the fork, caught by try", func(t *testing.T) {
			def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: test, name: fork-fault, version: '1.0.0'}
do:
  - guarded:
      try:
        - fan:
            fork:
              branches:
                - fine: {set: {ok: true}}
                - broken:
                    raise: {error: {type: https://example.com/errors/broken, status: 409, title: Broken}}
      catch:
        as: e
        do:
          - record: {set: {caught: '${ $e.type }', at: '${ $e.instance }'}}
`)
			w := n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			require.Equal(t, map[string]any{"caught": "https://example.com/errors/broken",
				"at": "/do/0/guarded/try/0/fan/fork/branches/1/broken"}, output(t, w))
		})

		t.Run("an uncaught branch fault fails the workflow", func(t *testing.T) {
			def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: test, name: fork-uncaught, version: '1.0.0'}
do:
  - fan:
      fork:
        branches:
          - broken:
              raise: {error: {type: https://example.com/errors/broken, status: 409}}
          - fine: {set: {ok: true}}
`)
			w := n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
			require.Equal(t, persistence.StatusFailed, w.Status)
			var p map[string]any
			require.NoError(t, json.Unmarshal([]byte(lastError(w)), &p))
			require.Equal(t, "https://example.com/errors/broken", p["type"])
		})

		t.Run("compete: the first to finish wins, the others are cancelled", func(t *testing.T) {
			def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: test, name: fork-compete, version: '1.0.0'}
do:
  - race:
      fork:
        compete: true
        branches:
          - slow:
              do:
                - nap: {wait: {hours: 1}}
                - late: {set: {winner: slow}}
          - fast: {set: {winner: fast}}
`)
			w := n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			require.Equal(t, map[string]any{"winner": "fast"}, output(t, w))
			statuses := map[string]persistence.Status{}
			for _, c := range childrenOf(t, store, w.ID) {
				statuses[*c.BusinessKey] = c.Status
			}
			require.Equal(t, map[string]persistence.Status{
				"/do/0/race/fork/branches/0/slow": persistence.StatusCancelled,
				"/do/0/race/fork/branches/1/fast": persistence.StatusFinished,
			}, statuses)
		})
	})
}

// childrenOf lists a workflow's children.
func childrenOf(t *testing.T, store *persistence.Store, id int64) []*persistence.Workflow {
	t.Helper()
	ws, _, err := store.WorkflowList(context.Background(), persistence.WorkflowListParams{Filter: persistence.WorkflowFilter{ParentID: &id}, Limit: 100})
	require.NoError(t, err)
	return ws
}
