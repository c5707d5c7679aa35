package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph"
	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// liveTokens returns the names of the tokens not revoked.
func liveTokens(t *testing.T, store *persistence.Store) []string {
	t.Helper()
	list, err := store.APITokenList(context.Background())
	require.NoError(t, err)
	var out []string
	for _, tk := range list {
		out = append(out, tk.Name)
	}
	return out
}

func TestTokensThroughTheAPI(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		require.NoError(t, store.APITokenInsert(ctx, &persistence.APIToken{Name: "root", Hash: persistence.HashToken("admin-secret"), Role: graph.RoleAdmin}))
		b := setup(t, store, func(c *server.Config) {
			c.Authenticate = server.StoreAuthenticator(store)
			c.TokenRecheckInterval = 100 * time.Millisecond
		})
		const admin = "Bearer admin-secret"
		const create = `mutation($in: CreateTokenInput!) { createToken(input: $in) { secret token { name role functions expiresAt created lastUsed } } }`

		// Bad input: each a coded error on its field, and no token made.
		for _, c := range []struct {
			in          map[string]any
			code, field string
		}{
			{map[string]any{"name": "", "role": "READER"}, "INVALID_INPUT", "name"},
			{map[string]any{"name": "old", "role": "READER", "expiresAt": "2020-01-01T00:00:00Z"}, "INVALID_INPUT", "expiresAt"},
			{map[string]any{"name": "w", "role": "WORKER"}, "INVALID_INPUT", "functions"},
			{map[string]any{"name": "r", "role": "READER", "functions": []string{"f"}}, "INVALID_INPUT", "functions"},
			{map[string]any{"name": "root", "role": "READER"}, "CONFLICT", "name"},
		} {
			_, resp := callAs(t, b, admin, create, map[string]any{"in": c.in})
			require.Len(t, resp.Errors, 1, "%v", c.in)
			require.Equal(t, c.code, resp.Errors[0].Extensions["code"], "%v: %s", c.in, resp.Errors[0].Message)
			require.Equal(t, c.field, resp.Errors[0].Extensions["field"], "%v", c.in)
		}
		// An unknown role is refused by the schema's enum before anything runs, naming the field.
		_, resp := callAs(t, b, admin, create, map[string]any{"in": map[string]any{"name": "boss", "role": "BOSS"}})
		require.Equal(t, "GRAPHQL_VALIDATION_FAILED", resp.Errors[0].Extensions["code"])
		require.Equal(t, "role", resp.Errors[0].Extensions["field"])
		require.Contains(t, resp.Errors[0].Message, "BOSS is not a valid Role")
		require.Equal(t, []string{"root"}, liveTokens(t, store), "bad input makes no token")

		var made struct {
			CreateToken struct {
				Secret string
				Token  struct {
					Name, Role string
					Functions  []string
					ExpiresAt  *time.Time
				}
			}
		}
		expires := time.Now().Add(3 * time.Second).UTC()
		_, resp = callAs(t, b, admin, create, map[string]any{"in": map[string]any{"name": "ops", "role": "OPERATOR", "expiresAt": expires.Format(time.RFC3339Nano)}})
		require.Empty(t, resp.Errors)
		require.NoError(t, json.Unmarshal(resp.Data, &made))
		require.Equal(t, "OPERATOR", made.CreateToken.Token.Role)
		require.NotNil(t, made.CreateToken.Token.ExpiresAt)
		require.WithinDuration(t, expires, *made.CreateToken.Token.ExpiresAt, time.Millisecond)
		operator := "Bearer " + made.CreateToken.Secret
		stored, err := store.APITokenGetByHash(ctx, persistence.HashToken(made.CreateToken.Secret))
		require.NoError(t, err, "the secret's hash is stored")
		require.NotContains(t, stored.Hash, made.CreateToken.Secret)

		_, resp = callAs(t, b, admin, create, map[string]any{"in": map[string]any{"name": "dash", "role": "READER"}})
		require.Empty(t, resp.Errors)
		require.NoError(t, json.Unmarshal(resp.Data, &made))
		reader := "Bearer " + made.CreateToken.Secret

		// An operator acts on workflows and schedules, but may not deploy, set flow control or manage tokens.
		for _, q := range []string{
			`mutation { startWorkflow(input: {type: "test.flow"}) { created } }`,
			`mutation { createSchedule(input: {type: "test.flow", cron: "@daily", name: "nightly"}) { schedule { id name } } }`,
			`{ workflows(first: 1) { totalCount } }`,
		} {
			status, resp := callAs(t, b, operator, q, nil)
			require.Equal(t, http.StatusOK, status, q)
			require.Empty(t, resp.Errors, q)
		}
		for _, q := range []string{
			`mutation { createToken(input: {name: "mine", role: ADMIN}) { secret } }`,
			`mutation { revokeToken(input: {name: "root"}) { revoked } }`,
			`{ tokens { name } }`,
			`query { ... on Query { tokens { name } } }`,
			`mutation { clearFlowControl(input: {type: "test.flow"}) { __typename } }`,
			`mutation { setDefinitionReleaseState(input: {type: "test.flow", releaseState: OFFLINE}) { __typename } }`,
		} {
			_, resp := callAs(t, b, operator, q, nil)
			require.NotEmpty(t, resp.Errors, q)
			require.Equal(t, "FORBIDDEN", resp.Errors[0].Extensions["code"], "%s: %s", q, resp.Errors[0].Message)
		}
		_, resp = callAs(t, b, reader, `mutation { startWorkflow(input: {type: "test.flow"}) { created } }`, nil)
		require.Equal(t, "FORBIDDEN", resp.Errors[0].Extensions["code"])
		_, resp = callAs(t, b, reader, `{ tokens { name } }`, nil)
		require.Equal(t, "FORBIDDEN", resp.Errors[0].Extensions["code"])
		require.Equal(t, []string{"dash", "ops", "root"}, liveTokens(t, store), "refused acts change nothing")

		// The admin lists tokens, with their last use (recorded on use).
		var list struct {
			Tokens []struct {
				Name     string
				Role     string
				LastUsed *time.Time
			}
		}
		_, resp = callAs(t, b, admin, `{ tokens { name role lastUsed } }`, nil)
		require.Empty(t, resp.Errors)
		require.NoError(t, json.Unmarshal(resp.Data, &list))
		require.Len(t, list.Tokens, 3)
		require.Equal(t, "ops", list.Tokens[1].Name)
		require.NotNil(t, list.Tokens[1].LastUsed, "the operator's use was recorded")

		// An open websocket of the operator's token closes when the token expires; HTTP refuses it too.
		ws, _, err := dialWS(t, b, "")
		require.NoError(t, err)
		ws.send(wsMessage{Type: "connection_init", Payload: json.RawMessage(`{"Authorization": "` + operator + `"}`)})
		require.Equal(t, "connection_ack", ws.next().Type)
		require.Error(t, ws.closed(), "the socket of an expired token is closed")
		require.False(t, time.Now().Before(expires), "closed only once the token expired")
		status, _ := callAs(t, b, operator, `{ workflows(first: 1) { totalCount } }`, nil)
		require.Equal(t, http.StatusUnauthorized, status, "an expired token is refused")

		// Revoking: the reader's token is refused from then on; an unknown name is NOT_FOUND.
		_, resp = callAs(t, b, admin, `mutation { revokeToken(input: {name: "dash"}) { revoked } }`, nil)
		require.Empty(t, resp.Errors)
		status, _ = callAs(t, b, reader, `{ workflows(first: 1) { totalCount } }`, nil)
		require.Equal(t, http.StatusUnauthorized, status)
		_, resp = callAs(t, b, admin, `mutation { revokeToken(input: {name: "dash"}) { revoked } }`, nil)
		require.Equal(t, "NOT_FOUND", resp.Errors[0].Extensions["code"])
		require.Equal(t, "name", resp.Errors[0].Extensions["field"])

		// The audit log has each act, by its actor.
		entries, err := store.AuditList(ctx, persistence.AuditListParams{Limit: 100})
		require.NoError(t, err)
		var acts []string
		for _, e := range entries {
			acts = append(acts, e.Actor+" "+e.Action+" "+*e.Subject)
		}
		require.Subset(t, acts, []string{"root createToken ops", "root createToken dash", "root revokeToken dash"})
		require.Contains(t, acts[len(acts)-4:], "ops createSchedule Schedule:1")
	})
}
