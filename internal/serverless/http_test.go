package serverless_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// TestHTTPCallLimits: by default a call may not reach a private or loopback address (SSRF); a host
// allowed by name may; a denied host never; a response past the size limit and a call past its
// timeout fault with Problem Details.
func TestHTTPCallLimits(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(strings.Repeat("x", 4096))) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	server := httptest.NewServer(mux)
	t.Cleanup(server.Close)
	doc := func(path string) string {
		return fmt.Sprintf("document: {dsl: '1.0.0', namespace: t, name: call, version: '1.0.0'}\ndo:\n  - get: {call: http, with: {method: get, endpoint: '%s%s'}}\n", server.URL, path)
	}
	cases := []struct {
		name   string
		opts   serverless.HTTPOptions
		path   string
		status int    // of the fault; 0: the call succeeds
		title  string // of the fault
	}{
		{name: "loopback refused by default", path: "/ok", status: 403, title: "Address Not Allowed"},
		{name: "allowed by name", opts: serverless.HTTPOptions{Allow: []string{"127.0.0.1"}}, path: "/ok"},
		{name: "not in the allow list", opts: serverless.HTTPOptions{Allow: []string{"*.example.com"}}, path: "/ok", status: 403, title: "Host Not Allowed"},
		{name: "denied", opts: serverless.HTTPOptions{Allow: []string{"127.0.0.1"}, Deny: []string{"127.0.0.*"}}, path: "/ok", status: 403, title: "Host Not Allowed"},
		{name: "response too large", opts: serverless.HTTPOptions{Allow: []string{"127.0.0.1"}, MaxResponseBytes: 1024}, path: "/big", status: 502, title: "HTTP Response Too Large"},
		{name: "timeout", opts: serverless.HTTPOptions{Allow: []string{"127.0.0.1"}, Timeout: 200 * time.Millisecond}, path: "/slow", status: 408, title: "HTTP Timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := newNodeWith(t, dbtest.Open(t, persistence.KindSQLite), serverless.Options{HTTP: tc.opts})
			n.startWorker(t)
			def := n.deploy(t, doc(tc.path))
			w := n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
			if tc.status == 0 {
				require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
				require.Equal(t, map[string]any{"ok": true}, output(t, w))
				return
			}
			require.Equal(t, persistence.StatusFailed, w.Status)
			var p serverless.Problem
			require.NoError(t, json.Unmarshal([]byte(lastError(w)), &p), lastError(w))
			require.Equal(t, tc.status, p.Status, lastError(w))
			require.Equal(t, tc.title, p.Title, lastError(w))
			require.Equal(t, "/do/0/get", p.Instance)
		})
	}
}

// TestSecretsAuthenticateAndStayOutOfHistory: a bearer token from $secret reaches the called
// endpoint, and neither the workflow's variables nor its history hold it.
func TestSecretsAuthenticateAndStayOutOfHistory(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-token"
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+secret {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"paid":true}`))
	}))
	t.Cleanup(server.Close)
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNodeWith(t, store, serverless.Options{Secrets: map[string]any{"payments": map[string]any{"token": secret}},
			HTTP: serverless.HTTPOptions{Allow: []string{"127.0.0.1"}}})
		n.startWorker(t)
		def := n.deploy(t, fmt.Sprintf(`
document: {dsl: '1.0.0', namespace: t, name: pay, version: '1.0.0'}
do:
  - pay:
      call: http
      with:
        method: post
        endpoint:
          uri: %s/pay
          authentication:
            bearer: {token: '${ $secret.payments.token }'}
        output: response
`, server.URL))
		w := n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		out, _ := output(t, w).(map[string]any)
		require.Equal(t, map[string]any{"paid": true}, out["content"])
		require.NotContains(t, string(w.Variables), secret)
		as, err := store.ActionList(context.Background(), persistence.ActionListParams{WorkflowIDs: []int64{w.ID}})
		require.NoError(t, err)
		for _, a := range as {
			vs, err := store.ActionVariableList(context.Background(), []int64{a.ID})
			require.NoError(t, err)
			for _, v := range vs {
				require.NotContains(t, string(v.Value), secret)
			}
		}
	})
}
