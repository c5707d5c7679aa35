package serverless_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

const errTimeout = "https://serverlessworkflow.io/spec/1.0.0/errors/timeout"

// TestTimeouts: a task's, a composite task's and the workflow's timeout fault with the DSL's
// timeout error (status 408) at the task that timed out, which a try around it catches; a task
// that waits (wait, listen, a fork's branches) is woken at its deadline, and the branches it
// waited for are cancelled.
func TestTimeouts(t *testing.T) {
	t.Parallel()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(20 * time.Second):
		}
	}))
	t.Cleanup(slow.Close)
	opts := serverless.Options{HTTP: serverless.HTTPOptions{Allow: []string{"127.0.0.1"}}}
	caught := func(instance string) map[string]any {
		return map[string]any{"caught": errTimeout, "status": float64(408), "at": instance}
	}
	catchAll := `
      catch:
        as: e
        do:
          - record: {set: {caught: '${ $e.type }', status: '${ $e.status }', at: '${ $e.instance }'}}`
	cases := []struct {
		name   string
		doc    string
		output map[string]any // nil: the workflow faults with a timeout at instance
		fault  string
	}{
		{name: "a wait past its task's timeout", doc: `
do:
  - guarded:
      try:
        - nap: {wait: {hours: 1}, timeout: {after: {milliseconds: 200}}}` + catchAll,
			output: caught("/do/0/guarded/try/0/nap")},
		{name: "a listen past a timeout from use.timeouts", doc: `
use:
  timeouts:
    short: {after: {milliseconds: 200}}
do:
  - guarded:
      try:
        - hear:
            listen: {to: {one: {with: {type: com.example.never}}}}
            timeout: short` + catchAll,
			output: caught("/do/0/guarded/try/0/hear")},
		{name: "a composite task's timeout", doc: `
do:
  - guarded:
      try:
        - slowly:
            timeout: {after: {milliseconds: 200}}
            do:
              - first: {set: {step: 1}}
              - nap: {wait: {hours: 1}}` + catchAll,
			output: caught("/do/0/guarded/try/0/slowly")},
		{name: "an HTTP call past its task's timeout", doc: fmt.Sprintf(`
do:
  - guarded:
      try:
        - fetch:
            call: http
            with: {method: get, endpoint: '%s/slow'}
            timeout: {after: {milliseconds: 300}}`, slow.URL) + catchAll,
			output: caught("/do/0/guarded/try/0/fetch")},
		{name: "the workflow's timeout is not caught", doc: `
use:
  timeouts:
    whole: {after: {milliseconds: 300}}
timeout: whole
do:
  - guarded:
      try:
        - hear:
            listen: {to: {one: {with: {type: com.example.never}}}}` + catchAll,
			fault: "/"},
		{name: "a fork's timeout cancels its branches", doc: `
do:
  - fan:
      timeout: {after: {milliseconds: 300}}
      fork:
        branches:
          - quick: {set: {x: 1}}
          - stuck: {wait: {hours: 1}}`,
			fault: "/do/0/fan"},
	}
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNodeWith(t, store, opts)
		n.startWorker(t)
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				def := n.deploy(t, fmt.Sprintf("document: {dsl: '1.0.0', namespace: timeouts, name: case%d, version: '1.0.0'}\n", i)+tc.doc)
				w := n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
				if tc.output != nil {
					require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
					require.Equal(t, tc.output, output(t, w))
					return
				}
				require.Equal(t, persistence.StatusFailed, w.Status)
				p := problemFields(t, w)
				require.Equal(t, errTimeout, p["type"])
				require.Equal(t, float64(408), p["status"])
				require.Equal(t, tc.fault, p["instance"])
				for _, c := range childrenOf(t, store, w.ID) {
					require.True(t, c.Status.Terminal(), "branch %s is %s after its fork timed out", *c.BusinessKey, c.Status)
				}
			})
		}
	})
}

// TestTimeoutIsDurable: the deadline of a waiting workflow is kept in the database, not in a
// goroutine: with no worker running when it passes, the next worker faults the workflow.
func TestTimeoutIsDurable(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		stop := n.startWorker(t)
		def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: timeouts, name: durable, version: '1.0.0'}
timeout: {after: {milliseconds: 500}}
do:
  - hear:
      listen: {to: {one: {with: {type: com.example.never}}}}
`)
		w := n.start(t, def.Type, `{}`)
		n.waitFor(t, w.ID, "waiting", func(w *persistence.Workflow) bool { return w.Status == persistence.StatusWaiting })
		stop()
		time.Sleep(time.Second) // the deadline passes while no worker runs
		got, err := store.WorkflowGet(t.Context(), w.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusWaiting, got.Status)

		other := newNode(t, store)
		other.startWorker(t)
		got = other.waitEnded(t, w.ID)
		require.Equal(t, persistence.StatusFailed, got.Status)
		require.Equal(t, errTimeout, problemFields(t, got)["type"])
	})
}
