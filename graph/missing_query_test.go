package graph_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// A request without a query is not a GraphQL request: 400 BAD_REQUEST, by POST or by GET.
func TestRequestWithoutQueryIsBadRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.Open(t, persistence.KindSQLite))
	for _, body := range []string{`{}`, `{"query": null}`, `{"query": ""}`, `{"variables": {"a": 1}}`} {
		status, resp := b.postRaw(t, body)
		require.Equal(t, http.StatusBadRequest, status, body)
		require.Len(t, resp.Errors, 1, body)
		require.Equal(t, "BAD_REQUEST", resp.Errors[0].Extensions["code"], body)
		require.Contains(t, resp.Errors[0].Message, "no query", body)
	}
	for _, params := range []string{"", "?operationName=x", "?query="} {
		resp, err := http.Get(b.srv.URL + "/graphql" + params)
		require.NoError(t, err)
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "GET %s: %s", params, raw)
		var out gqlResponse
		require.NoError(t, json.Unmarshal(raw, &out))
		require.Equal(t, "BAD_REQUEST", out.Errors[0].Extensions["code"])
	}
	// A request with a query still runs.
	status, resp := b.postRaw(t, `{"query": "{ __typename }"}`)
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, resp.Errors)
}
