package serverless_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// functionServer serves items (/items/{id}) and a catalog (/catalog, behind basic authentication
// user:pw) of functions: greet 1.0.0 (a set with an input schema) and item 1.0.0 (a call: http of
// the items); /fns/item.yaml is the latter by URI. It counts the catalog's fetches.
type functionServer struct {
	*httptest.Server
	fetches atomic.Int32
}

func newFunctionServer(t *testing.T) *functionServer {
	s := &functionServer{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": r.PathValue("id"), "name": "item " + r.PathValue("id")})
	})
	item := func() string {
		return fmt.Sprintf("input:\n  schema:\n    document: {type: object, required: [id]}\ncall: http\nwith: {method: get, endpoint: '%s/items/{id}'}\noutput: {as: '${ .name }'}\n", s.URL)
	}
	serve := func(body func() string, auth bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if u, p, _ := r.BasicAuth(); auth && (u != "user" || p != "pw") {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			s.fetches.Add(1)
			w.Header().Set("Content-Type", "application/yaml")
			_, _ = io.WriteString(w, body())
		}
	}
	mux.HandleFunc("GET /catalog/functions/greet/1.0.0/function.yaml", serve(func() string {
		return "input:\n  schema:\n    document: {type: object, properties: {name: {type: string}}, required: [name]}\nset: {greeting: '${ \"hello \" + .name }'}\n"
	}, true))
	mux.HandleFunc("GET /catalog/functions/item/1.0.0/function.yaml", serve(item, true))
	mux.HandleFunc("GET /catalog/functions/wait/1.0.0/function.yaml", serve(func() string { return "wait: PT1S\n" }, true))
	mux.HandleFunc("GET /fns/item.yaml", serve(item, false))
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// TestInlineFunction calls a function of use.functions twice: its task (a call: http with its own
// input.schema and output.as) runs with the call's `with` as its input, inside the calling task
// (whose own output.as applies after), and arguments its schema refuses fault the task with a
// validation error.
func TestInlineFunction(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		s := newFunctionServer(t)
		n := newNodeWith(t, store, serverless.Options{HTTP: serverless.HTTPOptions{Allow: []string{"127.0.0.1"}}})
		n.startWorker(t)
		def := n.deploy(t, fmt.Sprintf(`
document: {dsl: '1.0.0', namespace: fn, name: inline, version: '1.0.0'}
use:
  functions:
    getItem:
      input:
        schema:
          document: {type: object, properties: {id: {type: integer}}, required: [id]}
      call: http
      with: {method: get, endpoint: '%s/items/{id}'}
      output: {as: '${ .name }'}
do:
  - first:
      call: getItem
      with: {id: '${ .id }'}
      export: {as: '${ {first: .} }'}
  - second:
      call: getItem
      input: {from: '${ $workflow.input }'}
      with: {id: '${ .id + 1 }'}
      output: {as: '${ {first: $context.first, second: .} }'}
`, s.URL))
		w := n.waitEnded(t, n.start(t, def.Type, `{"id": 7}`).ID)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.Equal(t, map[string]any{"first": "item 7", "second": "item 8"}, output(t, w))
		require.Equal(t, []string{"start", "/do/0/first/with", "/do/0/first/call", "/do/1/second/with", "/do/1/second/call"}, statesRun(t, store, w.ID)[:5])

		bad := n.waitEnded(t, n.start(t, def.Type, `{"id": "seven"}`).ID)
		require.Equal(t, persistence.StatusFailed, bad.Status)
		p := problemFields(t, bad)
		require.Equal(t, "https://serverlessworkflow.io/spec/1.0.0/errors/validation", p["type"])
		require.Equal(t, "/do/0/first/call", p["instance"])
	})
}

// TestCatalogedFunction calls functions of a catalog served locally, behind basic authentication:
// by name:version@catalog and by the URI of the function.yaml; the definition is fetched when the
// call runs and kept a while (two runs, one fetch), its input.schema checks the arguments, and a
// function whose task would need states of its own faults.
func TestCatalogedFunction(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		s := newFunctionServer(t)
		n := newNodeWith(t, store, serverless.Options{HTTP: serverless.HTTPOptions{Allow: []string{"127.0.0.1"}}, Secrets: map[string]any{"catalog": map[string]any{"username": "user", "password": "pw"}}})
		n.startWorker(t)
		def := n.deploy(t, fmt.Sprintf(`
document: {dsl: '1.0.0', namespace: fn, name: cataloged, version: '1.0.0'}
use:
  catalogs:
    local:
      endpoint:
        uri: '%s/catalog'
        authentication: {basic: {use: catalog}}
do:
  - greet:
      call: greet:1.0.0@local
      with: {name: '${ .name }'}
      export: {as: '${ {greet: .greeting} }'}
  - item:
      call: item:1.0.0@local
      with: {id: 3}
      export: {as: '${ $context + {item: .} }'}
  - byURI:
      call: '%s/fns/item.yaml'
      with: {id: 4}
      output: {as: '${ $context + {byURI: .} }'}
`, s.URL, s.URL))
		w := n.waitEnded(t, n.start(t, def.Type, `{"name": "ada"}`).ID)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.Equal(t, map[string]any{"greet": "hello ada", "item": "item 3", "byURI": "item 4"}, output(t, w))
		require.Equal(t, int32(3), s.fetches.Load())

		w = n.waitEnded(t, n.start(t, def.Type, `{"name": "bob"}`).ID)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.Equal(t, int32(3), s.fetches.Load(), "the definitions fetched a moment ago are kept")

		bad := n.waitEnded(t, n.start(t, def.Type, `{"name": 5}`).ID)
		require.Equal(t, persistence.StatusFailed, bad.Status)
		require.Equal(t, "https://serverlessworkflow.io/spec/1.0.0/errors/validation", problemFields(t, bad)["type"])

		waits := n.deploy(t, fmt.Sprintf(`
document: {dsl: '1.0.0', namespace: fn, name: waits, version: '1.0.0'}
use:
  catalogs:
    local: {endpoint: {uri: '%s/catalog', authentication: {basic: {username: user, password: pw}}}}
do:
  - wait: {call: wait:1.0.0@local}
`, s.URL))
		w = n.waitEnded(t, n.start(t, waits.Type, `{}`).ID)
		require.Equal(t, persistence.StatusFailed, w.Status)
		require.Equal(t, "Unsupported Function", problemFields(t, w)["title"])
	})
}

// TestCustomFunctionsRefusedAtDeploy: a call of an undefined catalog, a recursive function, a
// fault in a function's definition, and a URI that names no definition are refused at deploy.
func TestCustomFunctionsRefusedAtDeploy(t *testing.T) {
	t.Parallel()
	c := serverless.NewCompiler(serverless.Options{})
	head := "document: {dsl: '1.0.0', namespace: fn, name: refused, version: '1.0.0'}\n"
	cases := map[string]struct{ doc, ptr string }{
		"undefined catalog": {head + "do:\n  - a: {call: 'log:1.0.0@nowhere'}\n", "/do/0/a/call"},
		"recursive":         {head + "use:\n  functions:\n    f: {call: f}\ndo:\n  - a: {call: f}\n", "/call"},
		"function fault":    {head + "use:\n  functions:\n    f: {call: http, with: {method: get, endpoint: 'ftp://x'}}\ndo:\n  - a: {call: f}\n", "/use/functions/f/with/endpoint"},
		"URI of no file":    {head + "do:\n  - a: {call: 'https://github.com/myorg/functions/validate@v1.0.0'}\n", "/do/0/a/call"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := c.Compile([]byte(tc.doc))
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.ptr)
		})
	}
}
