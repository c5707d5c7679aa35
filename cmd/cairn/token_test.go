package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence/dbtest"
)

// A token made with `cairn token create` opens a node started with --auth; none, a reader's for a
// mutation, or a revoked one do not.
func TestTokensGuardANodeStartedWithAuth(t *testing.T) {
	t.Parallel()
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			url := dbtest.URL(t, kind)
			require.Zero(t, runCairn(t, "", cairnEnv(), "migrate", "up", "--database", url).code)
			admin := runCairn(t, "", cairnEnv(), "token", "create", "--database", url, "--name", "ops")
			require.Zero(t, admin.code, admin.stderr)
			reader := runCairn(t, "", cairnEnv(), "token", "create", "--database", url, "--name", "dash", "--role", "reader")
			require.Zero(t, reader.code, reader.stderr)
			operator := runCairn(t, "", cairnEnv(), "token", "create", "--database", url, "--name", "oper", "--role", "operator")
			require.Zero(t, operator.code, operator.stderr)
			adminToken, readerToken := strings.TrimSpace(admin.stdout), strings.TrimSpace(reader.stdout)
			operatorToken := strings.TrimSpace(operator.stdout)
			require.True(t, strings.HasPrefix(adminToken, "cairn_"))
			dup := runCairn(t, "", cairnEnv(), "token", "create", "--database", url, "--name", "ops")
			require.Equal(t, 1, dup.code, "a taken name is refused")

			n := startNode(t, nil, "--database", url, "--demo", "--auth", "--addr", "127.0.0.1:0", "--log-format", "json")
			post := func(token, query string) (int, string) {
				req, err := http.NewRequest(http.MethodPost, "http://"+n.addr+"/graphql", strings.NewReader(`{"query": "`+query+`"}`))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/json")
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
				require.NoError(t, err)
				defer resp.Body.Close()
				var b strings.Builder
				_, _ = io.Copy(&b, resp.Body)
				return resp.StatusCode, b.String()
			}
			const start = `mutation { startWorkflow(input: {type: \"demo.order\"}) { created } }`
			code, body := post("", "{ executors { id } }")
			require.Equal(t, http.StatusUnauthorized, code, body)
			require.Contains(t, body, "UNAUTHENTICATED")
			code, body = post(readerToken, "{ executors { id } }")
			require.Equal(t, http.StatusOK, code, body)
			_, body = post(readerToken, start)
			require.Contains(t, body, "FORBIDDEN")
			_, body = post(adminToken, start)
			require.Contains(t, body, `"created":true`)
			_, body = post(operatorToken, start)
			require.Contains(t, body, `"created":true`, "an operator starts workflows")
			_, body = post(operatorToken, "{ tokens { name } }")
			require.Contains(t, body, "FORBIDDEN", "but does not manage tokens")

			revoke := runCairn(t, "", cairnEnv(), "token", "revoke", "--database", url, "--name", "ops")
			require.Zero(t, revoke.code, revoke.stderr)
			code, _ = post(adminToken, "{ executors { id } }")
			require.Equal(t, http.StatusUnauthorized, code)
			// The command line's acts are in the audit log, by cli.
			_, body = post(readerToken, "{ auditLog { items { actor action subject } } }")
			require.Contains(t, body, `{"actor":"cli","action":"tokenRevoke","subject":"ops"}`, body)
			require.Contains(t, body, `{"actor":"cli","action":"tokenCreate","subject":"dash"}`, body)
			require.Contains(t, body, `{"actor":"cli","action":"tokenCreate","subject":"ops"}`, body)
			require.Zero(t, n.stop(t), n.output())
		})
	}
}
