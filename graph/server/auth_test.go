package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph"
	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

func TestAPITokens(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		require.NoError(t, store.APITokenInsert(ctx, &persistence.APIToken{Name: "ops", Hash: persistence.HashToken("admin-secret"), Role: graph.RoleAdmin}))
		require.NoError(t, store.APITokenInsert(ctx, &persistence.APIToken{Name: "dash", Hash: persistence.HashToken("reader-secret"), Role: graph.RoleReader}))
		b := setup(t, store, func(c *server.Config) { c.Authenticate = server.StoreAuthenticator(store) })
		const query = `{ workflows(first: 1) { totalCount } }`
		const mutation = `mutation { startWorkflow(input: {type: "test.flow"}) { created } }`

		for _, bad := range []string{"", "Bearer nope", "Basic YWRtaW46YWRtaW4=", "Bearer"} {
			status, resp := postAs(t, b, bad, query)
			require.Equal(t, http.StatusUnauthorized, status, bad)
			require.Equal(t, "UNAUTHENTICATED", resp.Errors[0].Extensions["code"], bad)
		}

		status, resp := postAs(t, b, "Bearer reader-secret", query)
		require.Equal(t, http.StatusOK, status)
		require.Empty(t, resp.Errors)
		_, resp = postAs(t, b, "Bearer reader-secret", mutation)
		require.Len(t, resp.Errors, 1)
		require.Equal(t, "FORBIDDEN", resp.Errors[0].Extensions["code"])
		n, err := store.WorkflowCount(ctx, persistence.WorkflowFilter{})
		require.NoError(t, err)
		require.Zero(t, n, "a refused mutation changes nothing")

		_, resp = postAs(t, b, "bearer admin-secret", mutation)
		require.Empty(t, resp.Errors)

		require.NoError(t, store.APITokenRevoke(ctx, "ops"))
		status, _ = postAs(t, b, "Bearer admin-secret", query)
		require.Equal(t, http.StatusUnauthorized, status, "a revoked token is refused")

		// A websocket carries its token in connection_init (browsers cannot set headers on it).
		ws, _, err := dialWS(t, b, "")
		require.NoError(t, err)
		ws.send(wsMessage{Type: "connection_init", Payload: json.RawMessage(`{"Authorization": "Bearer reader-secret"}`)})
		require.Equal(t, "connection_ack", ws.next().Type)
		anon, _, err := dialWS(t, b, "")
		require.NoError(t, err)
		anon.send(wsMessage{Type: "connection_init"})
		require.Error(t, anon.closed(), "a websocket without a token is closed")
	})
}
