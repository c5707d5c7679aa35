package serverless_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

const header = "document: {dsl: '1.0.0', namespace: test, name: bad, version: '1.0.0'}\n"

// TestDeployRefusesFaultsAtTheirPointer deploys documents at fault: each is refused with
// INVALID_INPUT naming the JSON pointer of the fault, and nothing is stored.
func TestDeployRefusesFaultsAtTheirPointer(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, doc, field string
	}{
		{"not yaml", "do: [unclosed", "/"},
		{"no document", "do:\n  - a: {set: {x: 1}}\n", "/document"},
		{"no name", "document: {dsl: '1.0.0', namespace: test, version: '1.0.0'}\ndo:\n  - a: {set: {x: 1}}\n", "/document/name"},
		{"empty do", header + "do: []\n", "/do"},
		{"unknown then", header + "do:\n  - a: {set: {x: 1}, then: nowhere}\n", "/do/0/a/then"},
		{"unknown case target", header + "do:\n  - a:\n      switch:\n        - one: {when: .x, then: missing}\n", "/do/0/a/switch/0/one/then"},
		{"bad expression", header + "do:\n  - a: {set: {x: '${ .x + }'}}\n", "/do/0/a/set/x"},
		{"undefined variable", header + "do:\n  - a: {set: {x: '${ $nope }'}}\n", "/do/0/a/set/x"},
		{"loop variable outside its loop", header + "do:\n  - l:\n      for: {each: c, in: .xs}\n      do:\n        - a: {set: {x: '${ $c }'}}\n  - b: {set: {x: '${ $c }'}}\n", "/do/1/b/set/x"},
		{"undefined error", header + "do:\n  - a: {raise: {error: missing}}\n", "/do/0/a/raise/error"},
		{"undefined retry", header + "do:\n  - a:\n      try:\n        - b: {set: {x: 1}}\n      catch: {retry: missing}\n", "/do/0/a/catch/retry"},
		{"two billion retries", header + "do:\n  - a:\n      try:\n        - b: {set: {x: 1}}\n      catch: {retry: {limit: {attempt: {count: 2000000000}}}}\n", "/do/0/a/catch/retry/limit/attempt/count"},
		{"endless retry", header + "do:\n  - a:\n      try:\n        - b: {set: {x: 1}}\n      catch: {retry: {delay: PT1S}}\n", "/do/0/a/catch/retry/limit"},
		{"openapi document not http", header + "do:\n  - fetch: {call: openapi, with: {document: {endpoint: 'file:///etc/api.json'}, operationId: get}}\n", "/do/0/fetch/with/document/endpoint"},
		{"openapi without operation", header + "do:\n  - fetch: {call: openapi, with: {document: {endpoint: 'https://example.com/api.json'}}}\n", "/do/0/fetch/with/operationId"},
		{"fork branch that jumps to another", header + "do:\n  - f:\n      fork:\n        branches:\n          - a: {set: {x: 1}, then: b}\n          - b: {set: {x: 2}}\n", "/do/0/f/fork/branches/0/a/then"},
		{"extension of extensions", header + "use:\n  extensions:\n    - log: {extend: extension, before: [{note: {set: {x: 1}}}]}\ndo:\n  - a: {set: {x: 1}}\n", "/use/extensions/0/log/extend"},
		{"extension without a name", header + "use:\n  extensions:\n    - '': {extend: all, before: [{note: {set: {x: 1}}}]}\ndo:\n  - a: {set: {x: 1}}\n", "/use/extensions/0/"},
		{"extension of an unknown type", header + "use:\n  extensions:\n    - log: {extend: calls, before: [{note: {set: {x: 1}}}]}\ndo:\n  - a: {set: {x: 1}}\n", "/use/extensions/0/log/extend"},
		{"extension when undefined variable", header + "use:\n  extensions:\n    - log: {extend: all, when: '${ $item }', before: [{note: {set: {x: 1}}}]}\ndo:\n  - a: {set: {x: 1}}\n", "/use/extensions/0/log/when"},
		{"extension task refused", header + "use:\n  extensions:\n    - log: {extend: all, after: [{box: {run: {container: {image: alpine}}}}]}\ndo:\n  - a: {set: {x: 1}}\n", "/use/extensions/0/log/after/0/box/run/container"},
		{"extension key misspelt", header + "use:\n  extensions:\n    - log: {extend: all, befor: [{note: {set: {x: 1}}}]}\ndo:\n  - a: {set: {x: 1}}\n", "/use/extensions/0/log/befor"},
		{"extension then to another list", header + "use:\n  extensions:\n    - log: {extend: all, before: [{note: {set: {x: 1}, then: a}}]}\ndo:\n  - a: {set: {x: 1}}\n", "/use/extensions/0/log/before/0/note/then"},
		{"loose evaluation", header + "evaluate: {language: jq, mode: loose}\ndo:\n  - a: {set: {x: 1}}\n", "/evaluate/mode"},
		{"listen until without any", header + "do:\n  - l: {listen: {to: {one: {with: {type: t.a}}, until: '${ false }'}}}\n", "/do/0/l/listen/to/until"},
		{"listen foreach output", header + "do:\n  - l: {listen: {to: {one: {with: {type: t.a}}}, foreach: {do: [{x: {set: {a: 1}}}], outptu: {}}}}\n", "/do/0/l/listen/foreach/outptu"},
		{"fork branch that switches to another", header + "do:\n  - f:\n      fork:\n        branches:\n          - a:\n              switch:\n                - go: {then: b}\n          - b: {set: {x: 2}}\n", "/do/0/f/fork/branches/0/a/switch/0/go/then"},
		{"undefined timeout", header + "do:\n  - a: {set: {x: 1}, timeout: missing}\n", "/do/0/a/timeout"},
		{"timeout without after", header + "timeout: {seconds: 1}\ndo:\n  - a: {set: {x: 1}}\n", "/timeout"},
		{"call http without endpoint", header + "do:\n  - fetch: {call: http, with: {method: get, endpoint: 'ftp://x'}}\n", "/do/0/fetch/with/endpoint"},
		{"call grpc proto not http or file", header + "do:\n  - rpc: {call: grpc, with: {proto: {endpoint: 'ftp://x.proto'}, service: {name: S, host: h}, method: m}}\n", "/do/0/rpc/with/proto/endpoint"},
		{"run container not allowed", header + "do:\n  - box: {run: {container: {image: alpine}}}\n", "/do/0/box/run/container"},
		{"nested refused", header + "do:\n  - outer:\n      do:\n        - inner: {run: {container: {image: alpine}}}\n", "/do/0/outer/do/0/inner/run/container"},
		{"namespace not a hostname", "document: {dsl: '1.0.0', namespace: Not_Valid, name: bad, version: '1.0.0'}\ndo:\n  - a: {set: {x: 1}}\n", "/document/namespace"},
		{"fractional ISO duration", header + "do:\n  - a: {set: {x: 1}}\n  - nap: {wait: PT1.5S}\n", "/do/1/nap/wait"},
		{"external schema", header + "input: {schema: {resource: {endpoint: 'https://example.com/s.json'}}}\ndo:\n  - a: {set: {x: 1}}\n", "/input/schema/resource"},
		{"schema reference to a file", header + "do:\n  - a: {input: {schema: {document: {$ref: 'file:///etc/passwd'}}}, set: {x: 1}}\n", "/do/0/a/input/schema/document"},
		{"task name with NUL", header + "do:\n  - \"a\\0b\": {set: {x: 1}}\n", "/do/0/a\x00b"},
		{"type too long", "document: {dsl: '1.0.0', namespace: " + strings.Repeat("n", 200) + ", name: " + strings.Repeat("m", 60) + ", version: '1.0.0'}\ndo:\n  - a: {set: {x: 1}}\n", "/document/name"},
		{"path too long", header + "do:\n  - " + strings.Repeat("a", 150) + ":\n      do:\n        - " + strings.Repeat("b", 150) + ": {set: {x: 1}}\n", "/do/0/" + strings.Repeat("a", 150) + "/do/0/" + strings.Repeat("b", 150)},
		{"bad duration", header + "do:\n  - a: {wait: soon}\n", "/do/0/a/wait"},
		{"unknown task", header + "do:\n  - a: {frobnicate: {}}\n", "/do/0/a"},
	}
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				_, err := n.engine.Deploy(context.Background(), tc.doc, "")
				require.Error(t, err)
				var we *workflow.Error
				require.ErrorAs(t, err, &we, "%v", err)
				require.Equal(t, workflow.CodeInvalidInput, we.Code, "%v", err)
				require.Equal(t, tc.field, we.Field, "%v", err)
			})
		}
		defs, err := store.DefinitionList(context.Background(), persistence.DefinitionListParams{})
		require.NoError(t, err)
		require.Empty(t, defs, "a refused document stores nothing")
	})
}

// TestDeployVersions deploys a document twice unchanged (one version, created false), then changed
// (a new version); a workflow started on the first version keeps it.
func TestDeployVersions(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		ctx := context.Background()
		v1 := "document: {dsl: '1.0.0', namespace: shop, name: greet, version: '1.0.0'}\ndo:\n  - a: {set: {v: 1}}\n"
		res, err := n.engine.Deploy(ctx, v1, "")
		require.NoError(t, err)
		require.True(t, res.Created)
		require.Equal(t, "shop.greet", res.Definition.Type)
		require.Equal(t, 1, res.Definition.Version)
		w := n.start(t, "shop.greet", `{}`)

		// The same document, written as JSON: unchanged.
		again, err := n.engine.Deploy(ctx, `{"document":{"dsl":"1.0.0","namespace":"shop","name":"greet","version":"1.0.0"},"do":[{"a":{"set":{"v":1}}}]}`, "")
		require.NoError(t, err)
		require.False(t, again.Created)
		require.Equal(t, 1, again.Definition.Version)

		v2, err := n.engine.Deploy(ctx, "document: {dsl: '1.0.0', namespace: shop, name: greet, version: '1.1.0'}\ndo:\n  - a: {set: {v: 2}}\n", "")
		require.NoError(t, err)
		require.True(t, v2.Created)
		require.Equal(t, 2, v2.Definition.Version)

		n.startWorker(t)
		w = n.waitEnded(t, w.ID)
		require.Equal(t, map[string]any{"v": float64(1)}, output(t, w), "a running workflow keeps its version")
		w2 := n.waitEnded(t, n.start(t, "shop.greet", `{}`).ID)
		require.Equal(t, map[string]any{"v": float64(2)}, output(t, w2))
		require.Equal(t, 2, w2.DefinitionVersion)
	})
}
