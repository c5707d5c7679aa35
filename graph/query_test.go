package graph_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

func TestWorkflowsPagesBothWaysInEveryOrder(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		b := setup(t, store)
		for i := 0; i < 7; i++ {
			b.start(t, map[string]any{"priority": i % 3, "businessKey": "p"})
		}
		type page struct {
			Workflows struct {
				Edges []struct {
					Cursor string
					Node   struct{ ID string }
				}
				PageInfo struct {
					HasNextPage, HasPreviousPage bool
					StartCursor, EndCursor       *string
				}
				TotalCount int
			}
		}
		q := `query($o: WorkflowOrder, $first: Int, $after: String, $last: Int, $before: String) {
			workflows(filter: {businessKey: "p"}, orderBy: $o, first: $first, after: $after, last: $last, before: $before) {
				edges { cursor node { id } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } totalCount } }`
		for _, field := range []string{"CREATED", "MODIFIED", "NEXT_ACTIVATION", "PRIORITY"} {
			for _, dir := range []string{"ASC", "DESC"} {
				order := map[string]any{"field": field, "direction": dir}
				var all page
				b.must(t, q, &all, map[string]any{"o": order, "first": 100})
				require.Len(t, all.Workflows.Edges, 7)
				require.Equal(t, 7, all.Workflows.TotalCount)
				var want []string
				for _, e := range all.Workflows.Edges {
					want = append(want, e.Node.ID)
				}
				var fwd []string
				var after any
				for {
					var p page
					b.must(t, q, &p, map[string]any{"o": order, "first": 3, "after": after})
					for _, e := range p.Workflows.Edges {
						fwd = append(fwd, e.Node.ID)
					}
					require.Equal(t, after != nil, p.Workflows.PageInfo.HasPreviousPage)
					if !p.Workflows.PageInfo.HasNextPage {
						break
					}
					after = *p.Workflows.PageInfo.EndCursor
				}
				require.Equal(t, want, fwd, "%s %s forward", field, dir)
				var back []string
				var before any
				for {
					var p page
					b.must(t, q, &p, map[string]any{"o": order, "last": 3, "before": before})
					var ids []string
					for _, e := range p.Workflows.Edges {
						ids = append(ids, e.Node.ID)
					}
					back = append(ids, back...)
					if !p.Workflows.PageInfo.HasPreviousPage {
						break
					}
					before = *p.Workflows.PageInfo.StartCursor
				}
				require.Equal(t, want, back, "%s %s backward", field, dir)
			}
		}
		var p page
		b.must(t, q, &p, map[string]any{"first": 1})
		e := b.fails(t, "INVALID_INPUT", q, map[string]any{"o": map[string]any{"field": "PRIORITY"}, "after": *p.Workflows.PageInfo.EndCursor})
		require.Equal(t, "after", e.Extensions["field"], "a cursor of another order is refused")
		var zero page
		b.must(t, q, &zero, map[string]any{"first": 0})
		require.Empty(t, zero.Workflows.Edges)
		require.True(t, zero.Workflows.PageInfo.HasNextPage)
	})
}

func TestQueriesReadTheWholeDomain(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		b := setup(t, store)
		parentID := b.start(t, map[string]any{"externalId": "parent-1", "businessKey": "bk"})
		parent := newestWorkflow(t, store)
		child := &persistence.Workflow{Type: "test.flow", DefinitionVersion: 1, Status: persistence.StatusCreated, State: "start",
			ExecutorGroup: "default", ParentID: &parent.ID, RootID: &parent.ID}
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{child}))
		var out map[string]any
		b.must(t, `mutation($id: ID!) { updateWorkflow(input: {id: $id, variables: {a: 1}}) { workflow { id } } }`, &out, map[string]any{"id": parentID})
		b.must(t, `mutation($id: ID!) { updateWorkflow(input: {id: $id, variables: {a: 2, b: true}}) { workflow { id } } }`, &out, map[string]any{"id": parentID})
		b.must(t, `mutation($id: ID!) { signalWorkflow(input: {id: $id, name: "hello"}) { workflow { id } } }`, &out, map[string]any{"id": parentID})
		exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "node-1", PID: 42, Group: "default", Expiry: time.Minute})
		require.NoError(t, err)
		ti := &persistence.TaskInstance{WorkflowID: parent.ID, State: "start", TaskType: "handler", Attempt: 1, Status: persistence.TaskFailed,
			ExecutorID: &exec.ID, Host: "node-1", Started: persistence.Now(), Error: ptr("boom")}
		require.NoError(t, store.TaskInstanceInsertMany(ctx, []*persistence.TaskInstance{ti}))
		require.NoError(t, store.ActivityLogInsertMany(ctx, []*persistence.ActivityLog{{WorkflowID: parent.ID, TaskInstanceID: &ti.ID, Name: "note", Value: "hi", At: persistence.Now()}}))
		_, err = store.SideEffectRecord(ctx, persistence.SideEffectRecordParams{WorkflowID: parent.ID, Key: "charge", ValueType: "string", Value: json.RawMessage(`"ch_1"`)})
		require.NoError(t, err)

		var resp struct {
			Workflow struct {
				ID, Type, Status, State string
				ExternalID              string
				DefinitionVersion       int
				Variables               map[string]any
				Children                struct {
					TotalCount int
					Nodes      []struct {
						ID     string
						Parent struct{ ID string }
						Root   struct{ ID string }
					}
				}
				Root    struct{ ID string }
				Actions struct {
					Nodes []struct {
						ID              string
						VariableChanges []struct {
							Key   string
							Value any
						}
						VariablesAfter map[string]any
					}
				}
				TaskInstances struct {
					TotalCount int
					Nodes      []struct {
						Status       string
						Error        string
						Executor     struct{ Host string }
						ActivityLogs []struct{ Name, Value string }
					}
				}
				SideEffects []struct {
					ID, Key, ValueType string
					Value              string
				}
				Signals      []struct{ Name string }
				ActivityLogs []struct {
					Name         string
					TaskInstance struct{ Attempt int }
				}
				Definition struct {
					ID, Type, ReleaseState, Description string
					StepTimeoutMs                       int
					DefaultRetryPolicy                  struct{ MaxAttempts int }
					States                              []struct {
						Name, Kind    string
						Next          []string
						WaitForSignal *string
					}
				}
			}
		}
		b.must(t, `query($id: ID!) { workflow(id: $id) { id type status state externalId definitionVersion variables
			children { totalCount nodes { id parent { id } root { id } } } root { id }
			actions { nodes { id variableChanges { key value } variablesAfter } }
			taskInstances { totalCount nodes { status error executor { host } activityLogs { name value } } }
			sideEffects { id key valueType value } signals { name } activityLogs { name taskInstance { attempt } }
			definition { id type releaseState description stepTimeoutMs defaultRetryPolicy { maxAttempts } states { name kind next waitForSignal } } } }`,
			&resp, map[string]any{"id": parentID})
		w := resp.Workflow
		require.Equal(t, parentID, w.ID)
		require.Equal(t, "parent-1", w.ExternalID)
		require.Equal(t, map[string]any{"a": float64(2), "b": true}, w.Variables)
		require.Equal(t, 1, w.Children.TotalCount)
		require.Equal(t, parentID, w.Children.Nodes[0].Parent.ID)
		require.Equal(t, parentID, w.Children.Nodes[0].Root.ID)
		require.Equal(t, parentID, w.Root.ID, "a workflow without a parent is its own root")
		require.Len(t, w.Actions.Nodes, 2)
		require.Equal(t, map[string]any{"a": float64(1)}, w.Actions.Nodes[0].VariablesAfter, "variables as of the first action")
		require.Len(t, w.Actions.Nodes[1].VariableChanges, 2)
		require.Equal(t, 1, w.TaskInstances.TotalCount)
		require.Equal(t, "boom", w.TaskInstances.Nodes[0].Error)
		require.Equal(t, "node-1", w.TaskInstances.Nodes[0].Executor.Host)
		require.Equal(t, "hi", w.TaskInstances.Nodes[0].ActivityLogs[0].Value)
		require.Equal(t, "ch_1", w.SideEffects[0].Value)
		require.Equal(t, "hello", w.Signals[0].Name)
		require.Equal(t, 1, w.ActivityLogs[0].TaskInstance.Attempt)
		require.Equal(t, "ONLINE", w.Definition.ReleaseState)
		require.Equal(t, 60000, w.Definition.StepTimeoutMs)
		require.Len(t, w.Definition.States, len(testFlow.States))
		require.Equal(t, "approve", *w.Definition.States[2].WaitForSignal)

		// variablesAt, node, nodes, lookups by external ID and definition.
		firstAction := w.Actions.Nodes[0].ID
		var at struct {
			Workflow struct{ VariablesAt map[string]any }
		}
		b.must(t, `query($id: ID!, $a: ID!) { workflow(id: $id) { variablesAt(actionId: $a) } }`, &at, map[string]any{"id": parentID, "a": firstAction})
		require.Equal(t, map[string]any{"a": float64(1)}, at.Workflow.VariablesAt)
		childID := w.Children.Nodes[0].ID
		e := b.fails(t, "NOT_FOUND", `query($id: ID!, $a: ID!) { workflow(id: $id) { variablesAt(actionId: $a) } }`, map[string]any{"id": childID, "a": firstAction})
		require.Equal(t, "actionId", e.Extensions["field"])

		var nodes struct {
			Nodes []map[string]any
		}
		b.must(t, `query($ids: [ID!]!) { nodes(ids: $ids) { __typename id } }`, &nodes,
			map[string]any{"ids": []string{parentID, firstAction, w.Definition.ID, w.SideEffects[0].ID, childID}})
		require.Equal(t, []string{"Workflow", "Action", "WorkflowDefinition", "SideEffect", "Workflow"},
			[]string{nodes.Nodes[0]["__typename"].(string), nodes.Nodes[1]["__typename"].(string), nodes.Nodes[2]["__typename"].(string),
				nodes.Nodes[3]["__typename"].(string), nodes.Nodes[4]["__typename"].(string)})

		var ext struct {
			WorkflowByExternalID *struct{ ID string } `json:"workflowByExternalId"`
			Missing              *struct{ ID string }
			WorkflowDefinition   struct{ Version int }
			NoDef                *struct{ Version int }
			WorkflowDefinitions  []struct{ Type string }
		}
		b.must(t, `{ workflowByExternalId(type: "test.flow", externalId: "parent-1") { id }
			missing: workflowByExternalId(type: "test.flow", externalId: "nope") { id }
			workflowDefinition(type: "test.flow") { version } noDef: workflowDefinition(type: "nope") { version }
			workflowDefinitions { type } }`, &ext, nil)
		require.Equal(t, parentID, ext.WorkflowByExternalID.ID)
		require.Nil(t, ext.Missing)
		require.Equal(t, 1, ext.WorkflowDefinition.Version)
		require.Nil(t, ext.NoDef)
		require.Equal(t, "test.flow", ext.WorkflowDefinitions[0].Type)

		// Executors: alive, and what they hold.
		claimed, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Types: []string{"test.flow"}, Limit: 10,
			Now: time.Now().Add(time.Hour), StepDeadline: time.Now().Add(time.Hour)})
		require.NoError(t, err)
		require.Len(t, claimed, 1, "the parent is due; the child has nothing scheduled")
		var execs struct {
			Executors []struct {
				ID, Host, Group string
				Pid             int
				Alive           bool
				Workflows       []struct{ ID, Status string }
			}
		}
		b.must(t, `{ executors { id host group pid alive workflows { id status } } }`, &execs, nil)
		require.Len(t, execs.Executors, 1)
		require.True(t, execs.Executors[0].Alive)
		require.Equal(t, 42, execs.Executors[0].Pid)
		require.Len(t, execs.Executors[0].Workflows, 1)
		require.Equal(t, parentID, execs.Executors[0].Workflows[0].ID)
		require.Equal(t, "EXECUTING", execs.Executors[0].Workflows[0].Status)

		// Stats by status and type.
		var stats struct {
			WorkflowStats struct {
				Total    int
				ByStatus []struct {
					Status string
					Count  int
				}
				ByType []struct {
					Type  string
					Count int
				}
			}
		}
		b.must(t, `{ workflowStats { total byStatus { status count } byType { type count } } }`, &stats, nil)
		require.Equal(t, 2, stats.WorkflowStats.Total)
		counts := map[string]int{}
		for _, sc := range stats.WorkflowStats.ByStatus {
			counts[sc.Status] = sc.Count
		}
		require.Equal(t, map[string]int{"CREATED": 1, "EXECUTING": 1}, counts)
		require.Equal(t, 2, stats.WorkflowStats.ByType[0].Count)
	})
}

func ptr[T any](v T) *T { return &v }
