package serverless_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// echoServer answers each request with what it got: its headers X-*, its query, its
// Authorization header, and whether its basic password is the secret of the test.
func echoServer(t *testing.T) *httptest.Server {
	t.Helper()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		headers := map[string]string{}
		for k := range r.Header {
			if len(k) > 2 && k[:2] == "X-" {
				headers[k] = r.Header.Get(k)
			}
		}
		query := map[string]string{}
		for k := range r.URL.Query() {
			query[k] = r.URL.Query().Get(k)
		}
		user, password, _ := r.BasicAuth()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"headers": headers, "query": query, "authorization": r.Header.Get("Authorization"),
			"user": user, "passwordIsTheSecret": password == "hunter2-secret"})
	}))
	t.Cleanup(server.Close)
	return server
}

// TestArgAuthorizationAndHTTPExpressions: a call's headers and query may each be one runtime
// expression; $authorization is the call's resolved authentication (scheme and parameter) in its
// definition, output.as and export.as, and a basic parameter built from a secret is stored as
// [secret]; headers that are not an object fault the task with an expression error.
func TestArgAuthorizationAndHTTPExpressions(t *testing.T) {
	t.Parallel()
	server := echoServer(t)
	opts := serverless.Options{HTTP: serverless.HTTPOptions{Allow: []string{"127.0.0.1"}}, Secrets: map[string]any{"pw": "hunter2-secret"}}
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNodeWith(t, store, opts)
		n.startWorker(t)
		w, out := n.runToEnd(t, fmt.Sprintf(`
document: {dsl: '1.0.0', namespace: args, name: auth, version: '1.0.0'}
do:
  - basic:
      call: http
      with:
        method: get
        endpoint:
          uri: '%[1]s/echo'
          authentication: {basic: {username: ann, password: '${ $secrets.pw }'}}
        headers: '${ {"X-Tag": .tag, "X-Scheme": $authorization.scheme} }'
        query: '${ {q: .q, n: 2} }'
      output:
        as: '${ {basic: ., scheme: $authorization.scheme, param: $authorization.parameter} }'
      export:
        as: '${ {exportedScheme: $authorization.scheme} }'
  - bearer:
      call: http
      with:
        method: get
        endpoint:
          uri: '%[1]s/echo'
          authentication: {bearer: {token: tok-1}}
        headers: {X-Param: '${ $authorization.parameter }'}
      output:
        as: '${ $input + {bearer: ., auth: $authorization, context: $context} }'
  - none:
      call: http
      with: {method: get, endpoint: '%[1]s/echo'}
      output:
        as: '${ $input + {none: $authorization} }'
  - around:
      do:
        - inner:
            call: http
            with: {method: get, endpoint: {uri: '%[1]s/echo', authentication: {bearer: {token: tok-2}}}}
      output:
        as: '${ $input + {aroundAuth: $authorization, innerAuth: .authorization} }'
`, server.URL), `{"tag": "t-1", "q": "find me"}`)
		require.Equal(t, map[string]any{"X-Tag": "t-1", "X-Scheme": "Basic"}, out["basic"].(map[string]any)["headers"])
		require.Equal(t, map[string]any{"q": "find me", "n": "2"}, out["basic"].(map[string]any)["query"])
		require.Equal(t, "ann", out["basic"].(map[string]any)["user"])
		require.Equal(t, true, out["basic"].(map[string]any)["passwordIsTheSecret"], "the server got the credentials")
		require.Equal(t, "Basic [secret]", out["basic"].(map[string]any)["authorization"], "an echo of them is not stored")
		require.NotContains(t, string(w.Variables), base64.StdEncoding.EncodeToString([]byte("ann:hunter2-secret")))
		require.Equal(t, "Basic", out["scheme"])
		require.Equal(t, "[secret]", out["param"], "a parameter built from a secret is not stored")
		require.Equal(t, map[string]any{"X-Param": "tok-1"}, out["bearer"].(map[string]any)["headers"])
		require.Equal(t, "Bearer tok-1", out["bearer"].(map[string]any)["authorization"])
		require.Equal(t, map[string]any{"scheme": "Bearer", "parameter": "tok-1"}, out["auth"])
		require.Equal(t, map[string]any{"exportedScheme": "Basic"}, out["context"])
		require.Contains(t, out, "none")
		require.Nil(t, out["none"], "no authentication: $authorization is null")
		require.Equal(t, "Bearer tok-2", out["innerAuth"])
		require.Contains(t, out, "aroundAuth")
		require.Nil(t, out["aroundAuth"], "a call's authentication is not the task's around it")

		def := n.deploy(t, fmt.Sprintf(`
document: {dsl: '1.0.0', namespace: args, name: badheaders, version: '1.0.0'}
do:
  - call:
      call: http
      with: {method: get, endpoint: '%s/echo', headers: '${ "X-Tag: 1" }'}
`, server.URL))
		w = n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
		require.Equal(t, persistence.StatusFailed, w.Status)
		p := serverless.ProblemOf(w)
		require.NotNil(t, p, lastError(w))
		require.Equal(t, "https://serverlessworkflow.io/spec/1.0.0/errors/expression", p.Type)
		require.Equal(t, 400, p.Status)
		require.Equal(t, "/do/0/call/with/headers", p.Instance)
	})
}
