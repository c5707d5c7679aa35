package graph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// listByAttributes returns the business keys of the workflows a filter selects, oldest first, and
// checks that each carries its attributes.
func listByAttributes(t *testing.T, b *bundle, filter map[string]any) []string {
	t.Helper()
	var resp struct {
		Workflows struct {
			Nodes []struct {
				BusinessKey string
				Attributes  map[string]any
			}
		}
		WorkflowStats struct{ Total int }
	}
	b.must(t, `query($f: WorkflowFilter) { workflows(filter: $f, first: 50, orderBy: {field: CREATED, direction: ASC}) {
		nodes { businessKey attributes } } workflowStats(filter: $f) { total } }`, &resp, map[string]any{"f": filter})
	keys := []string{}
	for _, n := range resp.Workflows.Nodes {
		require.NotNil(t, n.Attributes)
		keys = append(keys, n.BusinessKey)
	}
	require.Equal(t, len(keys), resp.WorkflowStats.Total, "workflowStats counts what workflows lists")
	return keys
}

func TestWorkflowsFilteredBySearchAttributes(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		b.start(t, map[string]any{"businessKey": "a", "attributes": map[string]any{"region": "eu-west", "amount": 10, "vip": true, "due": "2026-01-01T00:00:00Z"}})
		b.start(t, map[string]any{"businessKey": "b", "attributes": map[string]any{"region": "us", "amount": 50, "vip": false, "due": "2026-03-01T00:00:00Z"}})
		idC := b.start(t, map[string]any{"businessKey": "c", "attributes": map[string]any{"region": "eu-north", "amount": 100}})
		b.start(t, map[string]any{"businessKey": "d"})

		var one struct {
			Workflow struct{ Attributes map[string]any }
		}
		b.must(t, `query($id: ID!) { workflow(id: $id) { attributes } }`, &one, map[string]any{"id": idC})
		require.Equal(t, map[string]any{"region": "eu-north", "amount": 100.0}, one.Workflow.Attributes)

		attr := func(fs ...map[string]any) map[string]any { return map[string]any{"attributes": fs} }
		require.Equal(t, []string{"a"}, listByAttributes(t, b, attr(map[string]any{"name": "region", "eq": "eu-west"})))
		require.Equal(t, []string{"a", "c"}, listByAttributes(t, b, attr(map[string]any{"name": "region", "prefix": "eu-"})))
		require.Equal(t, []string{"b", "c"}, listByAttributes(t, b, attr(map[string]any{"name": "amount", "gt": 20})))
		require.Equal(t, []string{"a", "b"}, listByAttributes(t, b, attr(map[string]any{"name": "amount", "lte": 50})))
		require.Equal(t, []string{"a", "b"}, listByAttributes(t, b, attr(map[string]any{"name": "region", "in": []any{"us", "eu-west", "mars"}})))
		require.Equal(t, []string{"b"}, listByAttributes(t, b, attr(map[string]any{"name": "vip", "eq": false})))
		require.Equal(t, []string{"b"}, listByAttributes(t, b, attr(map[string]any{"name": "due", "gte": "2026-02-01T01:00:00+01:00"})))
		require.Equal(t, []string{"c"}, listByAttributes(t, b, attr(map[string]any{"name": "region", "prefix": "eu"}, map[string]any{"name": "amount", "gte": 100})))
		require.Equal(t, []string{}, listByAttributes(t, b, attr(map[string]any{"name": "never.used", "eq": "x"})))
		with := attr(map[string]any{"name": "region", "prefix": "eu"})
		with["businessKey"] = "c"
		require.Equal(t, []string{"c"}, listByAttributes(t, b, with), "combined with the other filters")

		// Bad filters: INVALID_INPUT naming the condition.
		for _, c := range []struct {
			f     map[string]any
			field string
		}{
			{map[string]any{"name": "region", "gt": 5}, "filter.attributes[0].gt"},
			{map[string]any{"name": "amount", "prefix": "1"}, "filter.attributes[0].prefix"},
			{map[string]any{"name": "vip", "lt": true}, "filter.attributes[0].lt"},
			{map[string]any{"name": "due", "gt": "soon"}, "filter.attributes[0].gt"},
			{map[string]any{"name": "amount", "gt": 1, "lt": 5}, "filter.attributes[0]"},
			{map[string]any{"name": "amount"}, "filter.attributes[0]"},
			{map[string]any{"name": "amount", "in": []any{}}, "filter.attributes[0].in"},
			{map[string]any{"name": "no such!", "eq": 1}, "filter.attributes[0].name"},
		} {
			e := b.fails(t, "INVALID_INPUT", `query($f: WorkflowFilter) { workflows(filter: $f) { nodes { id } } }`, map[string]any{"f": attr(c.f)})
			require.Equal(t, c.field, e.Extensions["field"], "%v", c.f)
		}

		// updateWorkflow merges them (null removes one); a bad value changes nothing.
		b.must(t, `mutation($id: ID!, $a: JSON) { updateWorkflow(input: {id: $id, attributes: $a}) { workflow { id } } }`, &map[string]any{},
			map[string]any{"id": idC, "a": map[string]any{"region": "us", "amount": nil, "vip": true}})
		b.must(t, `query($id: ID!) { workflow(id: $id) { attributes } }`, &one, map[string]any{"id": idC})
		require.Equal(t, map[string]any{"region": "us", "vip": true}, one.Workflow.Attributes)
		e := b.fails(t, "INVALID_INPUT", `mutation($id: ID!, $a: JSON) { updateWorkflow(input: {id: $id, attributes: $a}) { workflow { id } } }`,
			map[string]any{"id": idC, "a": map[string]any{"region": "eu", "amount": "lots"}})
		require.Equal(t, "attributes.amount", e.Extensions["field"])
		require.Contains(t, e.Message, `"amount"`)
		b.must(t, `query($id: ID!) { workflow(id: $id) { attributes } }`, &one, map[string]any{"id": idC})
		require.Equal(t, map[string]any{"region": "us", "vip": true}, one.Workflow.Attributes)

		// A start with a bad attribute starts nothing.
		e = b.fails(t, "INVALID_INPUT", `mutation($in: StartWorkflowInput!) { startWorkflow(input: $in) { workflow { id } } }`,
			map[string]any{"in": map[string]any{"type": "test.flow", "businessKey": "e", "attributes": map[string]any{"vip": "yes"}}})
		require.Equal(t, "attributes.vip", e.Extensions["field"])
		require.Equal(t, []string{}, listByAttributes(t, b, map[string]any{"businessKey": "e"}))
	})
}

// Subscriptions filter by attributes too, from the stored backlog and live.
func TestWorkflowEventsFilteredBySearchAttributes(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		want := b.start(t, map[string]any{"attributes": map[string]any{"team": "red"}})
		b.start(t, map[string]any{"attributes": map[string]any{"team": "blue"}})
		b.start(t, nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		filter := map[string]any{"attributes": []any{map[string]any{"name": "team", "eq": "red"}}}
		sse := sseEvents(t, b, ctx, map[string]any{"filter": filter, "after": zeroCursor(t, b)})
		defer sse.Close()
		ev := sse.nextEvent()
		require.Equal(t, want, ev.WorkflowID, "from the backlog")
		require.Equal(t, "CREATED", ev.Type)

		b.start(t, map[string]any{"attributes": map[string]any{"team": "blue"}})
		live := b.start(t, map[string]any{"attributes": map[string]any{"team": "red"}})
		ev = sse.nextEvent()
		require.Equal(t, live, ev.WorkflowID, "live")

		// A workflow that gets the attribute later matches from then on (as the other fields of
		// a workflow, its attributes are read as they are when the event is handed out: its
		// CREATED event may match too when it is read after the update).
		other := b.start(t, nil)
		b.must(t, `mutation($id: ID!, $a: JSON) { updateWorkflow(input: {id: $id, attributes: $a}) { workflow { id } } }`, &map[string]any{},
			map[string]any{"id": other, "a": map[string]any{"team": "red"}})
		for ev = sse.nextEvent(); ev.Type == "CREATED"; ev = sse.nextEvent() {
			require.Equal(t, other, ev.WorkflowID)
		}
		require.Equal(t, other, ev.WorkflowID)
		require.Equal(t, "EXTERNAL_CHANGE", ev.Type)
	})
}
