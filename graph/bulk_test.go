package graph_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

type bulkOp struct {
	ID, Action, Status, Actor     string
	DryRun                        bool
	Reason                        *string
	Total, WouldChange, Processed int
	Succeeded, Failed             int
	Finished                      *string
	Filter                        map[string]any
	Failures                      struct {
		Items []struct {
			WorkflowID    string
			Workflow      *struct{ ID, Status string }
			Code, Message string
		}
		EndCursor   *string
		HasNextPage bool
	}
}

const bulkFields = `id action status actor dryRun reason total wouldChange processed succeeded failed finished filter
	failures(first: 1) { items { workflowId workflow { id status } code message } endCursor hasNextPage }`

func TestBulkOperationsThroughTheAPI(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		ids := make([]string, 4)
		for i := range ids {
			ids[i] = b.start(t, map[string]any{"businessKey": "api-bulk"})
		}
		var out map[string]any
		b.must(t, `mutation($id: ID!) { cancelWorkflow(input: {id: $id}) { workflow { id } } }`, &out, map[string]any{"id": ids[0]})
		filter := map[string]any{"businessKey": "api-bulk"}
		start := `mutation($in: StartBulkOperationInput!) { startBulkOperation(input: $in) { bulkOperation { ` + bulkFields + ` } } }`

		var dry struct {
			StartBulkOperation struct{ BulkOperation bulkOp }
		}
		b.must(t, start, &dry, map[string]any{"in": map[string]any{"action": "CANCEL", "filter": filter, "dryRun": true}})
		d := dry.StartBulkOperation.BulkOperation
		require.Equal(t, "SUCCEEDED", d.Status)
		require.True(t, d.DryRun)
		require.Equal(t, 4, d.Total)
		require.Equal(t, 3, d.WouldChange)
		require.Equal(t, "anonymous", d.Actor)
		require.Equal(t, "api-bulk", d.Filter["businessKey"])

		// Bad input changes nothing and names the field.
		for _, c := range []struct {
			in    map[string]any
			field string
		}{
			{map[string]any{"action": "CANCEL", "filter": map[string]any{}}, "filter"},
			{map[string]any{"action": "SIGNAL", "filter": filter}, "signal.name"},
			{map[string]any{"action": "PAUSE", "filter": filter, "state": "work"}, "state"},
			{map[string]any{"action": "CANCEL", "filter": map[string]any{"ids": []string{"nope"}}}, "filter.ids[0]"},
		} {
			e := b.fails(t, "INVALID_INPUT", start, map[string]any{"in": c.in})
			require.Equal(t, c.field, e.Extensions["field"], "%v", c.in)
		}
		_, resp := b.post(t, start, map[string]any{"in": map[string]any{"action": "TERMINATE", "filter": filter}})
		require.NotEmpty(t, resp.Errors, "an unknown action is refused")

		var started struct {
			StartBulkOperation struct{ BulkOperation bulkOp }
		}
		b.must(t, start, &started, map[string]any{"in": map[string]any{"action": "CANCEL", "filter": filter, "reason": "bad batch"}})
		op := started.StartBulkOperation.BulkOperation
		require.Equal(t, "PENDING", op.Status)
		require.Equal(t, 4, op.Total)

		ws, _, err := dialWS(t, b, "")
		require.NoError(t, err)
		ws.init()
		ws.subscribe("u", `subscription($id: ID!) { bulkOperationUpdated(id: $id) { id status processed } }`, map[string]any{"id": op.ID})
		next := func() (string, int) {
			t.Helper()
			select {
			case m := <-ws.in:
				require.Equal(t, "next", m.Type, string(m.Payload))
				var resp struct {
					Data struct {
						BulkOperationUpdated struct {
							Status    string
							Processed int
						}
					}
				}
				require.NoError(t, json.Unmarshal(m.Payload, &resp))
				return resp.Data.BulkOperationUpdated.Status, resp.Data.BulkOperationUpdated.Processed
			case <-time.After(60 * time.Second):
				t.Fatal("no update")
			case <-ws.ctx.Done():
				t.Fatal("connection closed")
			}
			return "", 0
		}
		status, _ := next()
		require.Equal(t, "PENDING", status)
		for {
			n, err := b.engine.RunBulk(context.Background(), engine.BulkRunOptions{Owner: "test", Batch: 2})
			require.NoError(t, err)
			if n == 0 {
				break
			}
		}
		for status != "SUCCEEDED" {
			status, _ = next()
		}
		select {
		case m := <-ws.in:
			require.Equal(t, "complete", m.Type, "the subscription ends with the operation")
		case <-time.After(60 * time.Second):
			t.Fatal("the subscription did not end")
		}

		var got struct{ BulkOperation bulkOp }
		b.must(t, `query($id: ID!) { bulkOperation(id: $id) { `+bulkFields+` } }`, &got, map[string]any{"id": op.ID})
		op = got.BulkOperation
		require.Equal(t, "SUCCEEDED", op.Status)
		require.Equal(t, 4, op.Processed)
		require.Equal(t, 3, op.Succeeded)
		require.Equal(t, 1, op.Failed)
		require.Equal(t, "bad batch", *op.Reason)
		require.Len(t, op.Failures.Items, 1)
		f := op.Failures.Items[0]
		require.Equal(t, ids[0], f.WorkflowID)
		require.Equal(t, ids[0], f.Workflow.ID)
		require.Equal(t, "CONFLICT", f.Code)
		require.Contains(t, f.Message, "already CANCELLED")
		require.False(t, op.Failures.HasNextPage)

		var hist struct {
			Workflow struct {
				Status  string
				Actions struct {
					Edges []struct {
						Node struct{ Actor, StateText *string }
					}
				}
			}
		}
		b.must(t, `query($id: ID!) { workflow(id: $id) { status actions(first: 5) { edges { node { actor stateText } } } } }`, &hist, map[string]any{"id": ids[1]})
		require.Equal(t, "CANCELLED", hist.Workflow.Status)
		require.Len(t, hist.Workflow.Actions.Edges, 1)
		require.Equal(t, "anonymous", *hist.Workflow.Actions.Edges[0].Node.Actor)
		require.Contains(t, *hist.Workflow.Actions.Edges[0].Node.StateText, "bad batch")

		var list struct{ BulkOperations []struct{ ID string } }
		b.must(t, `{ bulkOperations { id } }`, &list, nil)
		require.Len(t, list.BulkOperations, 2)
		require.Equal(t, op.ID, list.BulkOperations[0].ID, "newest first")
		b.must(t, `query($after: ID) { bulkOperations(first: 1, after: $after) { id } }`, &list, map[string]any{"after": op.ID})
		require.Equal(t, []struct{ ID string }{{d.ID}}, list.BulkOperations)

		cancel := `mutation($id: ID!) { cancelBulkOperation(input: {id: $id}) { bulkOperation { id status } } }`
		b.fails(t, "CONFLICT", cancel, map[string]any{"id": op.ID})
		e := b.fails(t, "INVALID_INPUT", cancel, map[string]any{"id": ids[1]})
		require.Equal(t, "id", e.Extensions["field"])
		var none struct{ BulkOperation *bulkOp }
		b.must(t, `query { bulkOperation(id: "`+base64.RawURLEncoding.EncodeToString([]byte("BulkOperation:999999"))+`") { id } }`, &none, nil)
		require.Nil(t, none.BulkOperation)
	})
}
