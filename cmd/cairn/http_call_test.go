package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence/dbtest"
)

// TestNodeKilledDuringHTTPCall kills a node (SIGKILL) while a deployed workflow's call: http task
// waits for its response; another node takes the workflow over, makes the call again (delivery is
// at least once) and finishes it.
func TestNodeKilledDuringHTTPCall(t *testing.T) {
	t.Parallel()
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			release := make(chan struct{})
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if calls.Add(1) == 1 {
					select { // the first call hangs until its node dies
					case <-r.Context().Done():
					case <-release:
					}
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(map[string]any{"charged": true})
			}))
			t.Cleanup(server.Close)
			t.Cleanup(func() { close(release) })

			url := dbtest.URL(t, kind)
			args := []string{"--database", url, "--addr", "127.0.0.1:0", "--log-format", "json", "--http-allow", "127.0.0.1",
				"--heartbeat-interval", "200ms", "--executor-expiry", "2s"}
			first := startNode(t, nil, args...)
			var deployed struct {
				DeployDefinition struct{ Definition struct{ Type string } }
			}
			first.graphql(t, deployMutation, map[string]any{"source": "document: {dsl: '1.0.0', namespace: shop, name: charge, version: '1.0.0'}\n" +
				"do:\n  - charge: {call: http, with: {method: post, endpoint: '" + server.URL + "/charge', body: {amount: '${ .amount }'}}}\n" +
				"  - done: {set: {charged: '${ .charged }'}}\n"}, &deployed)
			id := first.startWith(t, "shop.charge", map[string]any{"amount": 5})
			waitFor(t, 30*time.Second, "the first call", func() bool { return calls.Load() >= 1 })
			require.NoError(t, first.cmd.Process.Kill())
			<-first.exited

			second := startNode(t, nil, args...)
			require.Equal(t, map[string]any{"charged": true}, second.finishedOutput(t, id))
			require.Equal(t, int32(2), calls.Load(), "the call was made again after the node died")
			require.Zero(t, second.stop(t), second.output())
		})
	}
}
