package serverless_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// logServer is an HTTP server for extensions to call: POST /log keeps each body it gets, GET
// /data answers {"value": 42}, and every path counts its calls.
type logServer struct {
	*httptest.Server
	mu    sync.Mutex
	logs  []map[string]any
	calls map[string]int
}

func newLogServer(t *testing.T) *logServer {
	s := &logServer{calls: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.calls[r.URL.Path]++
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/log":
			var body map[string]any
			_ = json.NewDecoder(r.Body).Decode(&body)
			s.logs = append(s.logs, body)
			_, _ = fmt.Fprintf(w, `{"logged":%d}`, len(s.logs))
		default:
			_, _ = w.Write([]byte(`{"value":42}`))
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// took returns the bodies logged so far and forgets them, and the calls of a path.
func (s *logServer) took(path string) ([]map[string]any, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	logs := s.logs
	s.logs = nil
	return logs, s.calls[path]
}

const extHeader = "document: {dsl: '1.0.3', namespace: ext, name: %s, version: '1.0.0'}\n"

// TestExtensionsRunAroundTasks runs use.extensions on every backend: before and after lists
// around call: http tasks (calling a server), extend: all with nested tasks, a when that skips,
// two extensions in the order declared, a before list that mocks a call with then: exit, and a
// fault in an extension caught by a try around the extended task.
func TestExtensionsRunAroundTasks(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		srv := newLogServer(t) // one per backend: they run in parallel
		n := newNodeWith(t, store, serverless.Options{HTTP: serverless.HTTPOptions{Allow: []string{"127.0.0.1"}}})
		n.startWorker(t)
		run := func(t *testing.T, doc, input string) *persistence.Workflow {
			t.Helper()
			def := n.deploy(t, doc)
			w := n.waitEnded(t, n.start(t, def.Type, input).ID)
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			return w
		}

		t.Run("before and after a call", func(t *testing.T) {
			doc := fmt.Sprintf(extHeader+`use:
  extensions:
    - logging:
        extend: call
        before:
          - sendLog:
              call: http
              with:
                method: post
                endpoint: %[2]s/log
                body: {message: '${ "Executing " + $task.reference }', input: '${ $task.input }', seen: '${ . }'}
        after:
          - sendLog:
              call: http
              with:
                method: post
                endpoint: %[2]s/log
                body: {message: '${ "Executed " + $task.reference }', output: '${ $task.output }', seen: '${ . }'}
do:
  - prepare: {set: {k: 1}}
  - fetch: {call: http, with: {method: get, endpoint: '%[2]s/data'}}
  - done: {set: '${ . + {k: 2} }'}
`, "logging", srv.URL)
			w := run(t, doc, `{}`)
			// The lists' outputs (the log server's answers) are not the task's input or output.
			require.Equal(t, map[string]any{"value": float64(42), "k": float64(2)}, output(t, w))
			logs, _ := srv.took("/log")
			require.Equal(t, []map[string]any{
				{"message": "Executing /do/1/fetch", "input": map[string]any{"k": float64(1)}, "seen": map[string]any{"k": float64(1)}},
				{"message": "Executed /do/1/fetch", "output": map[string]any{"value": float64(42)}, "seen": map[string]any{"value": float64(42)}},
			}, logs)
			require.Equal(t, []string{"start", "/do/0/prepare", "/use/extensions/0/logging/before/0/sendLog", "/do/1/fetch",
				"/use/extensions/0/logging/after/0/sendLog", "/do/2/done"}, statesRun(t, store, w.ID))
		})

		t.Run("extend all", func(t *testing.T) {
			doc := fmt.Sprintf(extHeader+`use:
  extensions:
    - trace:
        extend: all
        before:
          - note:
              set: {mark: true}
              export: {as: '${ $context + {seen: (($context.seen // []) + [$task.name])} }'}
do:
  - a: {set: {x: 1}}
  - skipped: {if: '${ false }', set: {x: 2}}
  - b:
      do:
        - c: {set: {x: 3}}
  - loop:
      for: {in: '${ [1, 2] }'}
      do:
        - inc: {set: {x: '${ $item }'}}
  - final: {set: '${ $context }'}
`, "all")
			w := run(t, doc, `{}`)
			require.Equal(t, map[string]any{"seen": []any{"a", "b", "c", "loop", "inc", "inc", "final"}}, output(t, w))
		})

		t.Run("when false skips", func(t *testing.T) {
			doc := fmt.Sprintf(extHeader+`use:
  extensions:
    - onlyData:
        extend: call
        when: '${ $task.definition.with.endpoint | endswith("/data") }'
        after:
          - sendLog: {call: http, with: {method: post, endpoint: '%[2]s/log', body: {task: '${ $task.name }'}}}
do:
  - other: {call: http, with: {method: get, endpoint: '%[2]s/other'}}
  - data: {call: http, with: {method: get, endpoint: '%[2]s/data'}}
`, "when", srv.URL)
			w := run(t, doc, `{}`)
			require.Equal(t, map[string]any{"value": float64(42)}, output(t, w))
			logs, _ := srv.took("/log")
			require.Equal(t, []map[string]any{{"task": "data"}}, logs)
		})

		t.Run("two extensions in order", func(t *testing.T) {
			step := func(s string) string {
				return fmt.Sprintf(`[{mark: {set: {mark: true}, export: {as: '${ $context + {order: (($context.order // []) + ["%s"])} }'}}}]`, s)
			}
			doc := fmt.Sprintf(extHeader+`use:
  extensions:
    - one: {extend: wait, before: %s, after: %s}
    - other: {extend: set, before: [{never: {raise: {error: {type: x, status: 500}}}}]}
    - two: {extend: all, when: '${ $task.name == "work" }', before: %s, after: %s}
do:
  - work:
      wait: PT0S
      export: {as: '${ $context + {order: ($context.order + ["work"])} }'}
`, "order", step("one before"), step("one after"), step("two before"), step("two after"))
			w := run(t, doc, `{"in":1}`)
			require.Equal(t, map[string]any{"in": float64(1)}, output(t, w))
			var vars map[string]any
			require.NoError(t, json.Unmarshal(w.Variables, &vars))
			require.Equal(t, map[string]any{"order": []any{"one before", "two before", "work", "one after", "two after"}}, vars["context"])
		})

		t.Run("mock by then exit", func(t *testing.T) {
			doc := fmt.Sprintf(extHeader+`use:
  extensions:
    - mockService:
        extend: call
        when: '${ $task.definition.with.endpoint.uri != null and ($task.definition.with.endpoint.uri | startswith("%[2]s/mocked")) }'
        before:
          - mockResponse:
              set:
                statusCode: 200
                headers: {Content-Type: application/json}
                content: {foo: {bar: baz}}
              then: exit
          - never: {raise: {error: {type: x, status: 500}}}
    - logging:
        extend: call
        after:
          - sendLog: {call: http, with: {method: post, endpoint: '%[2]s/log', body: {output: '${ $task.output }'}}}
do:
  - mocked:
      call: http
      with: {method: get, endpoint: {uri: '%[2]s/mocked/sample'}}
      export: {as: '${ {mocked: .} }'}
  - real:
      call: http
      with: {method: get, endpoint: {uri: '%[2]s/data'}}
      output: {as: '${ $context + {real: .} }'}
`, "mock", srv.URL)
			w := run(t, doc, `{}`)
			injected := map[string]any{"statusCode": float64(200), "headers": map[string]any{"Content-Type": "application/json"},
				"content": map[string]any{"foo": map[string]any{"bar": "baz"}}}
			require.Equal(t, map[string]any{"mocked": injected, "real": map[string]any{"value": float64(42)}}, output(t, w))
			logs, mockedCalls := srv.took("/mocked/sample")
			require.Zero(t, mockedCalls, "the mocked endpoint is never called")
			require.Equal(t, []map[string]any{{"output": injected}, {"output": map[string]any{"mocked": injected, "real": map[string]any{"value": float64(42)}}}}, logs)
		})

		t.Run("fault in an extension", func(t *testing.T) {
			doc := fmt.Sprintf(extHeader+`use:
  extensions:
    - strict:
        extend: set
        after:
          - check:
              switch:
                - bad: {when: '${ .x > 1 }', then: fail}
                - ok: {then: exit}
          - fail: {raise: {error: {type: https://example.com/too-big, status: 422}}}
do:
  - guarded:
      try:
        - big: {set: {x: 2}}
      catch:
        as: e
        do:
          - caught: {set: '${ {type: $e.type, instance: $e.instance} }'}
  - small: {set: {x: 1}}
`, "fault")
			w := run(t, doc, `{}`)
			require.Equal(t, map[string]any{"x": float64(1)}, output(t, w))
			require.Contains(t, statesRun(t, store, w.ID), "/do/0/guarded/catch/do/0/caught")
			def := n.deploy(t, strings.Replace(doc, "  - small: {set: {x: 1}}\n", "", 1))
			w = n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
			require.Equal(t, map[string]any{"type": "https://example.com/too-big", "instance": "/use/extensions/0/strict/after/1/fail"}, output(t, w))
		})
	})
}

// TestExtensionsAroundBranchesListensAndEnds: extensions run around a fork and in its branches
// (child workflows), after a listen task whose foreach completes it, a then: end in an extension
// ends the workflow, a when that fails faults the task at the when's pointer, and the tasks of the
// extensions count toward MaxTasks.
func TestExtensionsAroundBranchesListensAndEnds(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		srv := newLogServer(t)
		n := newNodeWith(t, store, serverless.Options{HTTP: serverless.HTTPOptions{Allow: []string{"127.0.0.1"}}})
		n.startWorker(t)

		t.Run("fork and its branches", func(t *testing.T) {
			def := n.deploy(t, fmt.Sprintf(extHeader+`use:
  extensions:
    - trace:
        extend: all
        before:
          - sendLog: {call: http, with: {method: post, endpoint: '%[2]s/log', body: {task: '${ $task.reference }'}}}
do:
  - split:
      fork:
        branches:
          - left: {set: {side: left}}
          - right: {set: {side: right}}
  - final: {set: '${ {sides: map(.side)} }'}
`, "fork", srv.URL))
			w := n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			require.Equal(t, map[string]any{"sides": []any{"left", "right"}}, output(t, w))
			logs, _ := srv.took("/log")
			var tasks []string
			for _, l := range logs {
				tasks = append(tasks, l["task"].(string))
			}
			sort.Strings(tasks)
			require.Equal(t, []string{"/do/0/split", "/do/0/split/fork/branches/0/left", "/do/0/split/fork/branches/1/right", "/do/1/final"}, tasks)
		})

		t.Run("listen with foreach, then end", func(t *testing.T) {
			def := n.deploy(t, fmt.Sprintf(extHeader+`use:
  extensions:
    - watch:
        extend: listen
        after:
          - sendLog: {call: http, with: {method: post, endpoint: '%[2]s/log', body: {task: '${ $task.name }', output: '${ $task.output }'}}}
    - stop:
        extend: set
        when: '${ $task.name == "halt" }'
        before:
          - early: {set: '${ {stopped: .} }', then: end}
          - never: {raise: {error: {type: x, status: 500}}}
do:
  - hear:
      listen:
        to: {one: {with: {type: com.example.ext}}}
        foreach:
          do:
            - keep: {set: '${ {got: $item.n} }'}
  - halt: {set: {never: true}}
`, "listen", srv.URL))
			w := n.start(t, def.Type, `{}`)
			_, err := n.engine.Signal(context.Background(), workflow.SignalParams{ID: w.ID, Name: "com.example.ext",
				Payload: json.RawMessage(`{"specversion":"1.0","id":"e-1","source":"test","type":"com.example.ext","data":{"n":7}}`)})
			require.NoError(t, err)
			w = n.waitEnded(t, w.ID)
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			require.Equal(t, map[string]any{"stopped": map[string]any{"got": float64(7)}}, output(t, w))
			logs, _ := srv.took("/log")
			require.Equal(t, []map[string]any{{"task": "hear", "output": map[string]any{"got": float64(7)}}}, logs)
			require.NotContains(t, statesRun(t, store, w.ID), "/do/1/halt")
		})

		t.Run("when that fails", func(t *testing.T) {
			def := n.deploy(t, fmt.Sprintf(extHeader+`use:
  extensions:
    - bad: {extend: set, when: '${ error("no way") }', before: [{x: {set: {z: 1}}}]}
do:
  - a: {set: {x: 1}}
`, "badwhen"))
			w := n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
			require.Equal(t, persistence.StatusFailed, w.Status)
			var p serverless.Problem
			require.NoError(t, json.Unmarshal([]byte(lastError(w)), &p), lastError(w))
			require.Equal(t, "https://serverlessworkflow.io/spec/1.0.0/errors/expression", p.Type)
			require.Equal(t, "/use/extensions/0/bad/when", p.Instance)
		})

		t.Run("moved into an extension's task", func(t *testing.T) {
			def := n.deploy(t, fmt.Sprintf(extHeader+`use:
  extensions:
    - note: {extend: raise, before: [{mark: {set: {m: 1}}}]}
do:
  - fail: {raise: {error: {type: https://example.com/stop, status: 400}}}
`, "moved"))
			w := n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
			require.Equal(t, persistence.StatusFailed, w.Status)
			require.Contains(t, statesRun(t, store, w.ID), "/use/extensions/0/note/before/0/mark")
			_, err := n.engine.Retry(context.Background(), workflow.RetryParams{ChangeParams: workflow.ChangeParams{ID: w.ID, Reason: "test"},
				State: "/use/extensions/0/note/before/0/mark"})
			require.NoError(t, err)
			w = n.waitFor(t, w.ID, "failed again", func(w *persistence.Workflow) bool {
				return w.Status == persistence.StatusFailed && strings.Contains(lastError(w), "Lost Extension")
			})
			var p serverless.Problem
			require.NoError(t, json.Unmarshal([]byte(lastError(w)), &p), lastError(w))
			require.Equal(t, "/use/extensions/0/note/before/0/mark", p.Instance)
		})

		t.Run("extension tasks count toward MaxTasks and MaxDepth", func(t *testing.T) {
			var doc strings.Builder
			fmt.Fprintf(&doc, extHeader+"use:\n  extensions:\n    - two: {extend: all, before: [{a: {set: {x: 1}}}, {b: {set: {x: 2}}}]}\ndo:\n", "wide")
			for i := 0; i < serverless.MaxTasks-2; i++ {
				fmt.Fprintf(&doc, "  - t%d: {set: {x: 1}}\n", i)
			}
			n.deploy(t, doc.String())
			doc.WriteString("  - onemore: {set: {x: 1}}\n")
			_, err := n.engine.Deploy(context.Background(), doc.String(), "")
			var we *workflow.Error
			require.ErrorAs(t, err, &we)
			require.Equal(t, fmt.Sprintf("/do/%d/onemore", serverless.MaxTasks-2), we.Field)

			// An extension's lists nest within MaxDepth, counted from the list itself.
			nested := func(depth int) (string, string) {
				list, ptr := "[{leaf: {set: {x: 1}}}]", ""
				for i := depth - 1; i > 0; i-- {
					list = fmt.Sprintf("[{d%d: {do: %s}}]", i, list)
				}
				for i := 1; i < depth; i++ {
					ptr += fmt.Sprintf("/0/d%d/do", i)
				}
				return fmt.Sprintf(extHeader+"use:\n  extensions:\n    - deep: {extend: all, before: %s}\ndo:\n  - a: {set: {x: 1}}\n", "deep", list), ptr
			}
			ok, _ := nested(serverless.MaxDepth)
			n.deploy(t, ok)
			tooDeep, ptr := nested(serverless.MaxDepth + 1)
			_, err = n.engine.Deploy(context.Background(), tooDeep, "")
			require.ErrorAs(t, err, &we)
			require.Equal(t, "/use/extensions/0/deep/before"+ptr, we.Field)
		})
	})
}
