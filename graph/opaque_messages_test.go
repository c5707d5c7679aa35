package graph_test

import (
	"encoding/base64"
	"encoding/json"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// rowNumber finds a bare number in a message: an internal row ID that clients cannot use.
var rowNumber = regexp.MustCompile(`(^|[^\w])\d+([^\w]|$)`)

// Error messages name objects by the opaque IDs clients know, never by internal row numbers, and
// a subscription to an unknown workflow says which argument is at fault.
func TestErrorsNameOpaqueIDs(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		id := b.start(t, nil)
		var out map[string]any
		b.must(t, `mutation($id: ID!) { cancelWorkflow(input: {id: $id}) { workflow { id } } }`, &out, map[string]any{"id": id})
		e := b.fails(t, "CONFLICT", `mutation($id: ID!) { pauseWorkflow(input: {id: $id}) { workflow { id } } }`, map[string]any{"id": id})
		require.Contains(t, e.Message, id)
		require.NotRegexp(t, rowNumber, e.Message)

		missing := base64.RawURLEncoding.EncodeToString([]byte("Workflow:4242"))
		e = b.fails(t, "NOT_FOUND", `mutation($id: ID!) { retryWorkflow(input: {id: $id}) { workflow { id } } }`, map[string]any{"id": missing})
		require.Equal(t, "id", e.Extensions["field"])
		require.Contains(t, e.Message, missing)
		require.NotRegexp(t, rowNumber, e.Message)

		schedule := base64.RawURLEncoding.EncodeToString([]byte("Schedule:99"))
		e = b.fails(t, "NOT_FOUND", `mutation($id: ID!) { setSchedulePaused(input: {id: $id, paused: true}) { schedule { id } } }`, map[string]any{"id": schedule})
		require.Equal(t, "id", e.Extensions["field"])
		require.Contains(t, e.Message, schedule)
		require.NotRegexp(t, rowNumber, e.Message)

		ws, _, err := dialWS(t, b, "")
		require.NoError(t, err)
		ws.init()
		ws.subscribe("u", `subscription($id: ID!) { workflowUpdated(id: $id) { id } }`, map[string]any{"id": missing})
		m := ws.next()
		require.Contains(t, []string{"error", "next"}, m.Type)
		var errs []struct {
			Message    string
			Extensions map[string]any
		}
		switch p := m.Payload; m.Type {
		case "error":
			require.NoError(t, json.Unmarshal(p, &errs))
		default:
			var resp struct {
				Errors []struct {
					Message    string
					Extensions map[string]any
				}
			}
			require.NoError(t, json.Unmarshal(p, &resp))
			errs = resp.Errors
		}
		require.NotEmpty(t, errs, string(m.Payload))
		require.Equal(t, "NOT_FOUND", errs[0].Extensions["code"], string(m.Payload))
		require.Equal(t, "id", errs[0].Extensions["field"], string(m.Payload))
		require.Contains(t, errs[0].Message, missing)
	})
}
