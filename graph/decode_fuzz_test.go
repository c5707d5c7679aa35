package graph

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// requireClientError checks that err is an INVALID_INPUT error naming field: bad input is the
// client's error, never INTERNAL.
func requireClientError(t *testing.T, err error, field string) {
	t.Helper()
	var we *workflow.Error
	require.True(t, errors.As(err, &we), "%T %v", err, err)
	require.Equal(t, workflow.CodeInvalidInput, we.Code)
	require.Equal(t, field, we.Field)
}

// FuzzParseID: an opaque ID decodes to at most one row, and only from the one string that row
// encodes to; anything else is INVALID_INPUT on the field.
func FuzzParseID(f *testing.F) {
	f.Add(encodeID(kindWorkflow, 1))
	f.Add(encodeID(kindSchedule, 9223372036854775807))
	f.Add("V29ya2Zsb3c6KzE") // Workflow:+1
	f.Add("V29ya2Zsb3c6MDE") // Workflow:01
	f.Fuzz(func(t *testing.T, s string) {
		kind, id, ok := parseID(s)
		if ok {
			require.Positive(t, id)
			require.Equal(t, s, encodeID(kind, id), "an ID is canonical")
		}
		got, err := decodeID("id", kindWorkflow, s)
		if ok && kind == kindWorkflow {
			require.NoError(t, err)
			require.Equal(t, id, got)
		} else {
			requireClientError(t, err, "id")
		}
	})
}

// FuzzEncodeID: every row's ID decodes back to it (kinds are names without a colon).
func FuzzEncodeID(f *testing.F) {
	f.Add(kindWorkflow, int64(1))
	f.Add(kindDefinition, int64(9223372036854775807))
	f.Fuzz(func(t *testing.T, kind string, id int64) {
		s := encodeID(kind, id)
		k, got, ok := parseID(s)
		if id > 0 && !strings.Contains(kind, ":") && len(s) <= maxIDLength {
			require.True(t, ok, "%q %d", kind, id)
			require.Equal(t, kind, k)
			require.Equal(t, id, got)
		} else if id <= 0 {
			require.False(t, ok)
		}
	})
}

// workflowOrders are every order a workflow list can have.
var workflowOrders = []persistence.WorkflowOrderField{persistence.WorkflowOrderCreated, persistence.WorkflowOrderModified,
	persistence.WorkflowOrderNextActivation, persistence.WorkflowOrderPriority}

// FuzzWorkflowCursor: a cursor is refused as INVALID_INPUT on its argument, or it holds exactly the
// key of its order, in range, and encodes back to a cursor that decodes to the same key.
func FuzzWorkflowCursor(f *testing.F) {
	at := time.Date(2026, 11, 21, 13, 0, 0, 123456000, time.UTC)
	for _, field := range workflowOrders {
		w := &persistence.Workflow{ID: 7, Priority: -3, Created: at, Modified: at, NextActivation: &at}
		f.Add(workflowCursorOf(w, field, true))
		f.Add(workflowCursorOf(w, field, false))
	}
	f.Add(encodeCursor(map[string]any{"o": "priority:desc", "t": at, "n": 1, "i": 1}))
	f.Fuzz(func(t *testing.T, s string) {
		for _, field := range workflowOrders {
			for _, desc := range []bool{false, true} {
				k, err := parseWorkflowCursor("after", &s, field, desc)
				if err != nil {
					requireClientError(t, err, "after")
					continue
				}
				require.Positive(t, k.ID)
				w := &persistence.Workflow{ID: k.ID}
				switch v := k.Value.(type) {
				case int:
					require.Equal(t, persistence.WorkflowOrderPriority, field)
					require.True(t, v >= workflow.MinPriority && v <= workflow.MaxPriority)
					w.Priority = v
				case time.Time:
					require.NotEqual(t, persistence.WorkflowOrderPriority, field)
					require.NoError(t, workflow.CheckTime("after", v))
					w.Created, w.Modified, w.NextActivation = v, v, &v
				case nil:
					require.Equal(t, persistence.WorkflowOrderNextActivation, field)
				default:
					t.Fatalf("a cursor key of type %T", v)
				}
				again := workflowCursorOf(w, field, desc)
				k2, err := parseWorkflowCursor("after", &again, field, desc)
				require.NoError(t, err)
				require.Equal(t, k, k2)
			}
		}
	})
}

// FuzzRowCursor: a cursor of a workflow's actions is refused as INVALID_INPUT, or names one
// action and encodes back to itself.
func FuzzRowCursor(f *testing.F) {
	f.Add(rowCursorOf(kindAction, 1))
	f.Add(rowCursorOf(kindTaskInstance, 42))
	f.Add(encodeCursor(map[string]any{"k": kindAction, "i": -1}))
	f.Fuzz(func(t *testing.T, s string) {
		id, err := parseRowCursor("before", kindAction, &s)
		if err != nil {
			requireClientError(t, err, "before")
			return
		}
		require.Positive(t, id)
		again := rowCursorOf(kindAction, id)
		id2, err := parseRowCursor("before", kindAction, &again)
		require.NoError(t, err)
		require.Equal(t, id, id2)
	})
}

// FuzzEventCursor: a cursor of the change-event stream is refused as INVALID_INPUT on after, or
// names a position that encodes back to itself.
func FuzzEventCursor(f *testing.F) {
	f.Add(EventCursorStart())
	f.Add(eventCursorOf(persistence.EventCursor{TxID: 9223372036854775807, ID: 42}))
	f.Add(encodeCursor(map[string]any{"k": "e", "x": -1, "i": 1}))
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseEventCursor(s)
		if err != nil {
			requireClientError(t, err, "after")
			return
		}
		require.True(t, c.TxID >= 0 && c.ID >= 0)
		again, err := parseEventCursor(eventCursorOf(c))
		require.NoError(t, err)
		require.Equal(t, c, again)
	})
}
