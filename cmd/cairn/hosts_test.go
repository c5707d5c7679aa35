package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// hostRequest sends a request to the node with a Host header (and the Origin a page of that host
// sends) and returns the status and body.
func hostRequest(t *testing.T, n *node, method, path, host, body string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+n.addr+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Host = host
	req.Header.Set("Origin", "http://"+host)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return resp.StatusCode, "" // a websocket: closed here, not read until the node gives up on it
	}
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(raw)
}

// A page of a foreign name resolved to the node (DNS rebinding) reaches nothing on a node without
// --auth: GraphQL, websockets, SSE, the dashboard, GraphiQL and metrics answer 421 before anything
// runs; the node's own names, IP addresses and --allowed-hosts are served.
func TestForeignHostNamesAreRefused(t *testing.T) {
	t.Parallel()
	n := startNode(t, nil, "--database", dbtest.URL(t, persistence.KindSQLite), "--demo", "--no-workers", "--addr", "127.0.0.1:0",
		"--log-format", "json", "--allowed-hosts", "cairn.example.com, *.cairn.internal")
	_, port, err := net.SplitHostPort(n.addr)
	require.NoError(t, err)
	start := `{"query": "mutation { startWorkflow(input: {type: \"demo.order\"}) { created } }"}`
	count := `{"query": "{ workflows(first: 10) { nodes { id } } }"}`

	for _, host := range []string{"evil.example:" + port, "evil.example", "cairn.example.com.evil.example:" + port, "localhost.evil.example:" + port, "127.0.0.1.nip.io:" + port} {
		status, body := hostRequest(t, n, http.MethodPost, "/graphql", host, start)
		require.Equal(t, http.StatusMisdirectedRequest, status, "%s: %s", host, body)
		require.Contains(t, body, "MISDIRECTED_REQUEST")
		for _, r := range []struct{ method, path, body string }{
			{http.MethodGet, "/graphql?query=%7B__typename%7D", ""},
			{http.MethodGet, "/", ""},
			{http.MethodGet, "/ui/", ""},
			{http.MethodGet, "/metrics", ""},
			{http.MethodOptions, "/graphql", ""},
		} {
			status, _ := hostRequest(t, n, r.method, r.path, host, r.body)
			require.Equal(t, http.StatusMisdirectedRequest, status, "%s %s %s", host, r.method, r.path)
		}
		status, _ = hostRequest(t, n, http.MethodPost, "/graphql", host,
			`{"query": "subscription { workflowEvents { type } }"}`, "Accept", "text/event-stream")
		require.Equal(t, http.StatusMisdirectedRequest, status, "SSE from %s", host)
		status, _ = hostRequest(t, n, http.MethodGet, "/graphql", host, "", "Connection", "Upgrade", "Upgrade", "websocket",
			"Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Protocol", "graphql-transport-ws")
		require.Equal(t, http.StatusMisdirectedRequest, status, "websocket from %s", host)
		// The probes answer any name.
		status, _ = hostRequest(t, n, http.MethodGet, "/healthz", host, "")
		require.Equal(t, http.StatusOK, status)
	}
	status, body := hostRequest(t, n, http.MethodPost, "/graphql", "127.0.0.1:"+port, count)
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, `"nodes":[]`, "nothing was started")

	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST", "[::1]:" + port, "10.1.2.3", "cairn.example.com:" + port, "a.cairn.internal"} {
		status, body := hostRequest(t, n, http.MethodPost, "/graphql", host, start)
		require.Equal(t, http.StatusOK, status, "%s: %s", host, body)
		require.Contains(t, body, `"created":true`, host)
		status, _ = hostRequest(t, n, http.MethodGet, "/ui/", host, "")
		require.Equal(t, http.StatusOK, status, host)
		status, _ = hostRequest(t, n, http.MethodGet, "/graphql", host, "", "Connection", "Upgrade", "Upgrade", "websocket",
			"Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Protocol", "graphql-transport-ws")
		require.Equal(t, http.StatusSwitchingProtocols, status, "websocket from %s", host)
	}
}

// --allowed-hosts '*' answers every name (a node behind a proxy that checks names itself).
func TestAllowedHostsStarAnswersEveryName(t *testing.T) {
	t.Parallel()
	n := startNode(t, nil, "--database", dbtest.URL(t, persistence.KindSQLite), "--no-workers", "--addr", "127.0.0.1:0",
		"--log-format", "json", "--allowed-hosts", "*")
	status, body := hostRequest(t, n, http.MethodPost, "/graphql", "anything.example", `{"query": "{ __typename }"}`)
	require.Equal(t, http.StatusOK, status, body)
}
