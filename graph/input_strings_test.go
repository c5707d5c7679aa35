package graph_test

import (
	"encoding/base64"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// formFlow has a MANUAL state with a form, for submitForm's inputs (its workflows stay in begin:
// the scalars refuse the inputs before any rule is looked at).
var formFlow = workflow.Definition{
	Type: "test.form",
	States: []workflow.State{
		{Name: "begin", Kind: workflow.Start, Next: []string{"review"}, Handler: func(workflow.StepContext) (workflow.Next, error) {
			return workflow.MoveTo("review"), nil
		}},
		{Name: "review", Kind: workflow.Manual, Next: []string{"done"}, FormSchema: []byte(`{"type": "object"}`)},
		{Name: "done", Kind: workflow.End},
	},
}

// A NUL character in any string input, or in a string inside a JSON value, is refused with
// INVALID_INPUT naming the field, on both backends, and changes nothing.
func TestNULInAnyStringInputIsRefusedNamingTheField(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		_, err := b.engine.Register(t.Context(), formFlow)
		require.NoError(t, err)
		id := b.start(t, map[string]any{"externalId": "x"})
		var form struct {
			StartWorkflow struct{ Workflow struct{ ID string } }
		}
		b.must(t, `mutation { startWorkflow(input: {type: "test.form"}) { workflow { id } } }`, &form, nil)
		formID := form.StartWorkflow.Workflow.ID
		before := workflowsNow(t, store)

		const nul = "a\x00b"
		obj := map[string]any{"k": nul}
		start := `mutation($in: StartWorkflowInput!) { startWorkflow(input: $in) { workflow { id } } }`
		startIn := func(k string, v any) map[string]any {
			return map[string]any{"in": map[string]any{"type": "test.flow", k: v}}
		}
		cases := []struct {
			query string
			vars  map[string]any
			field string
		}{
			{start, startIn("type", nul), "type"},
			{start, startIn("externalId", nul), "externalId"},
			{start, startIn("businessKey", nul), "businessKey"},
			{start, startIn("launchToken", nul), "launchToken"},
			{start, startIn("idempotencyKey", nul), "idempotencyKey"},
			{start, startIn("input", obj), "input"},
			{start, startIn("variables", obj), "variables"},
			{start, startIn("variables", map[string]any{nul: 1}), "variables"},
			{start, startIn("input", map[string]any{"k": []any{1, map[string]any{"deep": nul}}}), "input"},
			{`mutation($in: StartWorkflowsInput!) { startWorkflows(input: $in) { results { created } } }`,
				map[string]any{"in": map[string]any{"workflows": []any{map[string]any{"type": "test.flow"}, map[string]any{"type": "test.flow", "businessKey": nul}}}},
				"workflows[1].businessKey"},
			{`mutation($id: ID!, $v: String) { retryWorkflow(input: {id: $id, state: $v}) { workflow { id } } }`, map[string]any{"id": id, "v": nul}, "state"},
			{`mutation($id: ID!, $v: String) { retryWorkflow(input: {id: $id, reason: $v}) { workflow { id } } }`, map[string]any{"id": id, "v": nul}, "reason"},
			{`mutation($id: ID!, $v: String) { pauseWorkflow(input: {id: $id, reason: $v}) { workflow { id } } }`, map[string]any{"id": id, "v": nul}, "reason"},
			{`mutation($id: ID!, $v: String) { cancelWorkflow(input: {id: $id, idempotencyKey: $v}) { workflow { id } } }`, map[string]any{"id": id, "v": nul}, "idempotencyKey"},
			{`mutation($id: ID!, $v: String!) { signalWorkflow(input: {id: $id, name: $v}) { workflow { id } } }`, map[string]any{"id": id, "v": nul}, "name"},
			{`mutation($id: ID!, $v: JSON) { signalWorkflow(input: {id: $id, name: "s", payload: $v}) { workflow { id } } }`, map[string]any{"id": id, "v": obj}, "payload"},
			{`mutation($id: ID!, $v: JSON) { signalWorkflow(input: {id: $id, name: "s", payload: $v}) { workflow { id } } }`, map[string]any{"id": id, "v": nul}, "payload"},
			{`mutation($id: ID!, $v: String) { updateWorkflow(input: {id: $id, stateText: $v}) { workflow { id } } }`, map[string]any{"id": id, "v": nul}, "stateText"},
			{`mutation($id: ID!, $v: String) { updateWorkflow(input: {id: $id, state: $v}) { workflow { id } } }`, map[string]any{"id": id, "v": nul}, "state"},
			{`mutation($id: ID!, $v: JSON) { updateWorkflow(input: {id: $id, variables: $v}) { workflow { id } } }`, map[string]any{"id": id, "v": obj}, "variables"},
			{`mutation($id: ID!, $v: String!) { submitForm(input: {id: $id, data: {}, submittedBy: $v}) { workflow { id } } }`, map[string]any{"id": formID, "v": nul}, "submittedBy"},
			{`mutation($id: ID!, $v: JSON!) { submitForm(input: {id: $id, data: $v, submittedBy: "me"}) { workflow { id } } }`, map[string]any{"id": formID, "v": obj}, "data"},
			{`mutation($v: String!) { setDefinitionReleaseState(input: {type: $v, releaseState: OFFLINE}) { definition { type } } }`, map[string]any{"v": nul}, "type"},
			{`mutation($v: String!) { createSchedule(input: {type: "test.flow", cron: $v}) { schedule { id } } }`, map[string]any{"v": nul}, "cron"},
			{`mutation($v: String) { createSchedule(input: {type: "test.flow", cron: "@daily", timezone: $v}) { schedule { id } } }`, map[string]any{"v": nul}, "timezone"},
			{`mutation($v: JSON) { createSchedule(input: {type: "test.flow", cron: "@daily", input: $v}) { schedule { id } } }`, map[string]any{"v": obj}, "input"},
			{`query($v: String!) { workflowByExternalId(type: "test.flow", externalId: $v) { id } }`, map[string]any{"v": nul}, "externalId"},
			{`query($v: String) { workflowDefinitions(type: $v) { type } }`, map[string]any{"v": nul}, "type"},
			{`query($v: String!) { workflowDefinition(type: $v) { type } }`, map[string]any{"v": nul}, "type"},
			{`query($v: String) { workflows(filter: {externalId: $v}) { totalCount } }`, map[string]any{"v": nul}, "filter.externalId"},
			{`query($v: String) { workflows(filter: {businessKey: $v}) { totalCount } }`, map[string]any{"v": nul}, "filter.businessKey"},
			{`query($v: String) { workflows(filter: {executorGroup: $v}) { totalCount } }`, map[string]any{"v": nul}, "filter.executorGroup"},
			{`query($v: String!) { workflows(filter: {types: ["test.flow", $v]}) { totalCount } }`, map[string]any{"v": nul}, "filter.types[1]"},
			{`query($v: String!) { workflows(filter: {states: [$v]}) { totalCount } }`, map[string]any{"v": nul}, "filter.states[0]"},
			{`query($v: String) { workflows(after: $v) { totalCount } }`, map[string]any{"v": nul}, "after"},
			{`query($v: ID!) { workflow(id: $v) { id } }`, map[string]any{"v": nul}, "id"},
			// In the query text itself.
			{`mutation { startWorkflow(input: {type: "test.flow", input: {k: "a\u0000b"}}) { workflow { id } } }`, nil, "input"},
			{`mutation { startWorkflow(input: {type: "test.flow", externalId: "a\u0000b"}) { workflow { id } } }`, nil, "externalId"},
		}
		for _, c := range cases {
			e := b.fails(t, "INVALID_INPUT", c.query, c.vars)
			require.Equal(t, c.field, e.Extensions["field"], "%s %v: %s", c.query, c.vars, e.Message)
		}
		require.Equal(t, before, workflowsNow(t, store), "nothing refused changed anything")

		// A JSON string without a NUL round-trips exactly, escapes and all.
		var echo struct {
			StartWorkflow struct {
				Workflow struct{ Input map[string]any }
			}
		}
		tricky := map[string]any{"k": `a\u0000b`, "u": "é\u2028😀", "q": `"\`}
		b.must(t, `mutation($in: StartWorkflowInput!) { startWorkflow(input: $in) { workflow { input } } }`, &echo,
			map[string]any{"in": map[string]any{"type": "test.flow", "input": tricky}})
		require.Equal(t, tricky, echo.StartWorkflow.Workflow.Input)
	})
}

// workflowsNow returns every workflow as stored, to compare before and after refused requests.
func workflowsNow(t *testing.T, store *persistence.Store) []persistence.Workflow {
	t.Helper()
	wfs, _, err := store.WorkflowList(t.Context(), persistence.WorkflowListParams{Limit: 100})
	require.NoError(t, err)
	out := make([]persistence.Workflow, len(wfs))
	for i, w := range wfs {
		out[i] = *w
		out[i].Input, out[i].Variables = nil, nil // compared as text below
	}
	return out
}

// Strings that are indexed or looked up have a length limit (workflow.MaxKeyLength characters),
// free text another (workflow.MaxTextLength); beyond them: INVALID_INPUT naming the field, never
// PostgreSQL's index row error.
func TestLongStringsAreRefusedNamingTheField(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		id := b.start(t, nil)
		long := strings.Repeat("x", 3000)
		start := `mutation($in: StartWorkflowInput!) { startWorkflow(input: $in) { workflow { id } } }`
		for _, field := range []string{"externalId", "businessKey", "launchToken", "idempotencyKey", "type"} {
			e := b.fails(t, "INVALID_INPUT", start, map[string]any{"in": map[string]any{"type": "test.flow", field: long}})
			require.Equal(t, field, e.Extensions["field"])
			require.Contains(t, e.Message, "255")
		}
		e := b.fails(t, "INVALID_INPUT", start, map[string]any{"in": map[string]any{"type": "test.flow", "variables": map[string]any{long: 1}}})
		require.Equal(t, "variables", e.Extensions["field"])
		e = b.fails(t, "INVALID_INPUT", `mutation($id: ID!, $v: String!) { signalWorkflow(input: {id: $id, name: $v}) { workflow { id } } }`,
			map[string]any{"id": id, "v": long})
		require.Equal(t, "name", e.Extensions["field"])
		e = b.fails(t, "INVALID_INPUT", `mutation($id: ID!, $v: String) { signalWorkflow(input: {id: $id, name: "s", idempotencyKey: $v}) { workflow { id } } }`,
			map[string]any{"id": id, "v": long})
		require.Equal(t, "idempotencyKey", e.Extensions["field"])
		e = b.fails(t, "INVALID_INPUT", `mutation($id: ID!, $v: JSON) { updateWorkflow(input: {id: $id, variables: $v}) { workflow { id } } }`,
			map[string]any{"id": id, "v": map[string]any{long: 1}})
		require.Equal(t, "variables", e.Extensions["field"])
		text := strings.Repeat("y", workflow.MaxTextLength+1)
		e = b.fails(t, "INVALID_INPUT", `mutation($id: ID!, $v: String) { pauseWorkflow(input: {id: $id, reason: $v}) { workflow { id } } }`,
			map[string]any{"id": id, "v": text})
		require.Equal(t, "reason", e.Extensions["field"])
		e = b.fails(t, "INVALID_INPUT", `mutation($id: ID!, $v: String) { updateWorkflow(input: {id: $id, stateText: $v}) { workflow { id } } }`,
			map[string]any{"id": id, "v": text})
		require.Equal(t, "stateText", e.Extensions["field"])
		n, err := store.WorkflowCount(t.Context(), persistence.WorkflowFilter{})
		require.NoError(t, err)
		require.Equal(t, 1, n)

		// At the limit, in characters (not bytes), everything is stored and found again.
		key := strings.Repeat("é", workflow.MaxKeyLength)
		in := map[string]any{"type": "test.flow", "externalId": key, "businessKey": key, "launchToken": key, "idempotencyKey": key,
			"variables": map[string]any{key: 1}}
		b.start(t, in)
		var found struct{ WorkflowByExternalID *struct{ BusinessKey string } }
		b.must(t, `query($k: String!) { workflowByExternalId(type: "test.flow", externalId: $k) { businessKey } }`, &found, map[string]any{"k": key})
		require.NotNil(t, found.WorkflowByExternalID)
		require.Equal(t, key, found.WorkflowByExternalID.BusinessKey)
		var sig map[string]any
		b.must(t, `mutation($id: ID!, $k: String!) { signalWorkflow(input: {id: $id, name: $k, idempotencyKey: $k}) { workflow { id } } }`, &sig,
			map[string]any{"id": id, "k": key})
	})
}

// GraphQL's Int is 32-bit; versions start at 1; every object has exactly one ID.
func TestIntsVersionsAndIDsAreStrict(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		for _, q := range []string{
			`mutation { startWorkflow(input: {type: "test.flow", priority: 99999999999}) { workflow { id } } }`,
			`mutation { startWorkflow(input: {type: "test.flow", priority: -2147483649}) { workflow { id } } }`,
		} {
			e := b.fails(t, "INVALID_INPUT", q, nil)
			require.Equal(t, "priority", e.Extensions["field"], q)
		}
		e := b.fails(t, "INVALID_INPUT", `mutation($p: Int) { startWorkflow(input: {type: "test.flow", priority: $p}) { workflow { id } } }`,
			map[string]any{"p": int64(2147483648)})
		require.Equal(t, "priority", e.Extensions["field"])
		e = b.fails(t, "INVALID_INPUT", `{ workflows(first: 4294967297) { totalCount } }`, nil)
		require.Equal(t, "first", e.Extensions["field"], "not first: 1 after wrapping around")
		e = b.fails(t, "INVALID_INPUT", `mutation { createSchedule(input: {type: "test.flow", cron: "@daily", priority: 3000000000}) { schedule { id } } }`, nil)
		require.Equal(t, "priority", e.Extensions["field"])
		n, err := store.WorkflowCount(t.Context(), persistence.WorkflowFilter{})
		require.NoError(t, err)
		require.Zero(t, n)
		var top struct {
			StartWorkflow struct{ Workflow struct{ Priority int } }
		}
		b.must(t, `mutation { startWorkflow(input: {type: "test.flow", priority: 2147483647}) { workflow { priority } } }`, &top, nil)
		require.Equal(t, 2147483647, top.StartWorkflow.Workflow.Priority)

		for _, v := range []string{"0", "-5"} {
			e = b.fails(t, "INVALID_INPUT", `{ workflowDefinition(type: "test.flow", version: `+v+`) { version } }`, nil)
			require.Equal(t, "version", e.Extensions["field"])
		}
		var def struct{ WorkflowDefinition struct{ Version int } }
		b.must(t, `{ workflowDefinition(type: "test.flow", version: 1) { version } }`, &def, nil)
		require.Equal(t, 1, def.WorkflowDefinition.Version)

		id := b.start(t, nil)
		row := newestWorkflow(t, store).ID
		require.Equal(t, base64.RawURLEncoding.EncodeToString([]byte("Workflow:"+itoa(row))), id, "the canonical form")
		var got struct{ Workflow *struct{ ID string } }
		b.must(t, `query($id: ID!) { workflow(id: $id) { id } }`, &got, map[string]any{"id": id})
		require.Equal(t, id, got.Workflow.ID)
		raw, _ := base64.RawURLEncoding.DecodeString(id)
		last := id[:len(id)-1] + string(id[len(id)-1]^1) // other padding bits, same bytes when they are ignored
		for _, forged := range []string{
			base64.RawURLEncoding.EncodeToString([]byte("Workflow:+" + itoa(row))),
			base64.RawURLEncoding.EncodeToString([]byte("Workflow:0" + itoa(row))),
			base64.URLEncoding.EncodeToString(raw), // padded
			base64.RawStdEncoding.EncodeToString([]byte("Workflow:" + itoa(row) + "\x00")),
			last,
			id + strings.Repeat("A", 1000),
		} {
			if forged == id {
				continue
			}
			e = b.fails(t, "INVALID_INPUT", `query($id: ID!) { workflow(id: $id) { id } }`, map[string]any{"id": forged})
			require.Equal(t, "id", e.Extensions["field"], forged)
			e = b.fails(t, "INVALID_INPUT", `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": forged})
			require.Equal(t, "id", e.Extensions["field"], forged)
		}
		e = b.fails(t, "INVALID_INPUT", `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, map[string]any{"ids": []string{id, id, "garbage"}})
		require.Equal(t, "ids[2]", e.Extensions["field"])
		e = b.fails(t, "INVALID_INPUT", `query($ids: [ID!]) { workflows(filter: {ids: $ids}) { totalCount } }`, map[string]any{"ids": []string{id, "garbage"}})
		require.Equal(t, "filter.ids[1]", e.Extensions["field"])
	})
}

// A forged cursor (the wrong keys for its order, values out of range, garbage) is INVALID_INPUT
// naming after or before, never INTERNAL.
func TestForgedCursorsAreRefused(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		id := b.start(t, map[string]any{"priority": 3})
		b.start(t, nil)
		enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
		list := `query($o: WorkflowOrder, $after: String, $before: String) { workflows(orderBy: $o, first: 5, after: $after, before: $before) { totalCount nodes { id } } }`
		prio := map[string]any{"field": "PRIORITY"}
		created := map[string]any{"field": "CREATED"}
		next := map[string]any{"field": "NEXT_ACTIVATION"}
		cases := []struct {
			order  map[string]any
			cursor string
		}{
			{prio, enc(`{"o":"priority:desc","t":"2020-01-01T00:00:00Z","n":1,"i":1}`)}, // both keys
			{prio, enc(`{"o":"priority:desc","t":"2020-01-01T00:00:00Z","i":1}`)},
			{prio, enc(`{"o":"priority:desc","n":99999999999,"i":1}`)},
			{prio, enc(`{"o":"priority:desc","n":1e400,"i":1}`)},
			{prio, enc(`{"o":"priority:desc","n":"1","i":1}`)},
			{prio, enc(`{"o":"priority:desc","n":1,"i":0}`)},
			{prio, enc(`{"o":"priority:desc","n":1,"i":99999999999999999999}`)},
			{prio, enc(`{"o":"priority:desc","n":1,"i":1,"x":2}`)},
			{prio, enc(`{"o":"priority:desc","n":1,"i":1}{}`)},
			{prio, enc(`{"o":"priority:desc","n":1,"i":1}`) + "="},
			{created, enc(`{"o":"created:desc","t":"2020-01-01T00:00:00Z","n":3,"i":1}`)},
			{created, enc(`{"o":"created:desc","t":"0000-01-01T00:00:00Z","i":1}`)},
			{created, enc(`{"o":"created:desc","t":"20000-01-01T00:00:00Z","i":1}`)},
			{created, enc(`{"o":"created:desc","i":1}`)},
			{created, enc(`[1,2,3]`)},
			{created, enc(`null`)},
			{created, "!!!"},
			{created, strings.Repeat("A", 100000)},
			{next, enc(`{"o":"next_activation:desc","n":1,"i":1}`)},
		}
		for _, c := range cases {
			for _, arg := range []string{"after", "before"} {
				e := b.fails(t, "INVALID_INPUT", list, map[string]any{"o": c.order, arg: c.cursor})
				require.Equal(t, arg, e.Extensions["field"], "%v %s", c.order, c.cursor)
			}
		}
		for _, forged := range []string{enc(`{"k":"Action","i":-1}`), enc(`{"k":"Action","i":1,"n":2}`), "%%%"} {
			e := b.fails(t, "INVALID_INPUT", `query($id: ID!, $a: String) { workflow(id: $id) { actions(after: $a) { totalCount } } }`,
				map[string]any{"id": id, "a": forged})
			require.Equal(t, "after", e.Extensions["field"], forged)
		}

		// Real cursors still page.
		var page struct {
			Workflows struct {
				Nodes    []struct{ ID string }
				PageInfo struct{ EndCursor string }
			}
		}
		b.must(t, `query($o: WorkflowOrder) { workflows(orderBy: $o, first: 1) { nodes { id } pageInfo { endCursor } } }`, &page, map[string]any{"o": prio})
		require.Equal(t, id, page.Workflows.Nodes[0].ID)
		var rest struct {
			Workflows struct {
				TotalCount int
				Nodes      []struct{ ID string }
			}
		}
		b.must(t, list, &rest, map[string]any{"o": prio, "after": page.Workflows.PageInfo.EndCursor})
		require.Len(t, rest.Workflows.Nodes, 1)
		require.NotEqual(t, id, rest.Workflows.Nodes[0].ID)
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
