package serverless_test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// TestPrivateAddressRefusedBeforeConnect: a call to a loopback or private address is refused
// before any connection is made, with one answer whether a port is open or closed, so a document
// cannot map what listens inside the node's network.
func TestPrivateAddressRefusedBeforeConnect(t *testing.T) {
	t.Parallel()
	open, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = open.Close() })
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedAddr := closed.Addr().String()
	require.NoError(t, closed.Close())

	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNodeWith(t, store, serverless.Options{})
		n.startWorker(t)
		problemFor := func(name, addr string) string {
			def := n.deploy(t, fmt.Sprintf("document: {dsl: '1.0.0', namespace: t, name: %s, version: '1.0.0'}\ndo:\n  - get: {call: http, with: {method: get, endpoint: 'http://%s/admin'}}\n", name, addr))
			w := n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
			require.Equal(t, persistence.StatusFailed, w.Status)
			return lastError(w)
		}
		atOpen, atClosed := problemFor("open", open.Addr().String()), problemFor("closed", closedAddr)
		require.Equal(t, atOpen, atClosed, "an open and a closed port must give the same answer")
		p := serverless.ProblemOf(&persistence.Workflow{LastError: &atOpen})
		require.NotNil(t, p, atOpen)
		require.Equal(t, 403, p.Status, atOpen)
		require.Equal(t, "Address Not Allowed", p.Title, atOpen)
		require.Equal(t, "/do/0/get", p.Instance)

		// A private address answers alike (nothing is dialled, so nothing waits on it).
		atPrivate := problemFor("private", "10.255.255.1:8080")
		require.Equal(t, strings.ReplaceAll(atOpen, "127.0.0.1", "10.255.255.1"), atPrivate)
	})

	// The open port's listener saw no connection: a queued one is accepted at once.
	require.NoError(t, open.(*net.TCPListener).SetDeadline(time.Now().Add(200*time.Millisecond)))
	conn, err := open.Accept()
	if conn != nil {
		_ = conn.Close()
	}
	require.True(t, errors.Is(err, os.ErrDeadlineExceeded), "the open port was connected to (accept: %v)", err)
}

// TestSlowResponseBodyTimesOut: an endpoint that sends its headers but not its body within
// --http-timeout faults the task with the standard timeout error, as one that never answers does.
func TestSlowResponseBodyTimesOut(t *testing.T) {
	t.Parallel()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"items": [`))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(server.Close)
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNodeWith(t, store, serverless.Options{HTTP: serverless.HTTPOptions{Allow: []string{"127.0.0.1"}, Timeout: 300 * time.Millisecond}})
		n.startWorker(t)
		def := n.deploy(t, fmt.Sprintf("document: {dsl: '1.0.0', namespace: t, name: slow, version: '1.0.0'}\ndo:\n  - get: {call: http, with: {method: get, endpoint: '%s/items'}}\n", server.URL))
		w := n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
		require.Equal(t, persistence.StatusFailed, w.Status)
		p := serverless.ProblemOf(w)
		require.NotNil(t, p, lastError(w))
		require.Equal(t, "https://serverlessworkflow.io/spec/1.0.0/errors/timeout", p.Type, lastError(w))
		require.Equal(t, 408, p.Status, lastError(w))
		require.Equal(t, "/do/0/get", p.Instance)
	})
}
