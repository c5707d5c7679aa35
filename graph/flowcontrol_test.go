package graph_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

const setFlow = `mutation($in: SetFlowControlInput!) { setFlowControl(input: $in) { flowControl {
	type source concurrency { limit scope key strategy } rateLimit { limit periodMs key } keys { key running waiting } } } }`

const listFlows = `{ flowControls { type source concurrency { limit } keys { key running waiting } } }`

type flowControlJSON struct {
	Type, Source string
	Concurrency  *struct {
		Limit           int
		Scope, Strategy string
		Key             *string
	}
	RateLimit *struct {
		Limit, PeriodMs int
		Key             *string
	}
	Keys []struct {
		Key              *string
		Running, Waiting int
	}
}

// setFlowControl refuses bad input naming the field and changing nothing; a valid one is in force
// at once (RUNTIME), flowControls counts each key's holders and waiters, Workflow.blockedReason
// says why a due workflow waits, and clearFlowControl removes it.
func TestSetFlowControlAndBlockedReason(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		b := setup(t, store)
		bad := map[string]map[string]any{
			"concurrency.limit": {"type": "test.flow", "concurrency": map[string]any{"limit": 0}},
			"type":              {"type": "no.such.type", "concurrency": map[string]any{"limit": 1}},
			"rateLimit.period":  {"type": "test.flow", "rateLimit": map[string]any{"limit": 5, "period": "soon"}},
			"rateLimit.limit":   {"type": "test.flow", "rateLimit": map[string]any{"limit": -1, "period": "1s"}},
			"concurrency.key":   {"type": "test.flow", "concurrency": map[string]any{"limit": 1, "key": ".customer | ["}},
		}
		for field, in := range bad {
			e := b.fails(t, "INVALID_INPUT", setFlow, map[string]any{"in": in})
			require.Equal(t, field, e.Extensions["field"], e.Message)
		}
		var list struct{ FlowControls []flowControlJSON }
		b.must(t, listFlows, &list, nil)
		require.Empty(t, list.FlowControls, "bad input changed nothing")

		var set struct {
			SetFlowControl struct{ FlowControl *flowControlJSON }
		}
		b.must(t, setFlow, &set, map[string]any{"in": map[string]any{"type": "test.flow",
			"concurrency": map[string]any{"limit": 1, "key": ".customer"}, "rateLimit": map[string]any{"limit": 100, "period": "PT1M"}}})
		fc := set.SetFlowControl.FlowControl
		require.NotNil(t, fc)
		require.Equal(t, "RUNTIME", fc.Source)
		require.Equal(t, 1, fc.Concurrency.Limit)
		require.Equal(t, "WORKFLOW", fc.Concurrency.Scope)
		require.Equal(t, "QUEUE", fc.Concurrency.Strategy)
		require.Equal(t, ".customer", *fc.Concurrency.Key)
		require.Equal(t, 60000, fc.RateLimit.PeriodMs)

		first := b.start(t, map[string]any{"input": map[string]any{"customer": "cust-7"}})
		second := b.start(t, map[string]any{"input": map[string]any{"customer": "cust-7"}})
		other := b.start(t, map[string]any{"input": map[string]any{"customer": "x"}, "concurrencyKey": "cust-8"})

		// A node claims: the oldest of cust-7 and the one of cust-8, not the second of cust-7.
		exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Minute})
		require.NoError(t, err)
		flows, err := b.engine.FlowTypes(ctx, []string{"test.flow"})
		require.NoError(t, err)
		require.Len(t, flows, 1)
		now := persistence.Now()
		res, err := store.WorkflowFlowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: 10, Now: now,
			StepDeadline: now.Add(time.Minute)}, flows[0].Spec())
		require.NoError(t, err)
		require.Len(t, res.Claimed, 2)

		var read struct {
			First, Second, Other struct {
				ConcurrencyKey *string
				BlockedReason  *string
			}
		}
		q := `query($a: ID!, $b: ID!, $c: ID!) {
			first: workflow(id: $a) { concurrencyKey blockedReason }
			second: workflow(id: $b) { concurrencyKey blockedReason }
			other: workflow(id: $c) { concurrencyKey blockedReason } }`
		b.must(t, q, &read, map[string]any{"a": first, "b": second, "c": other})
		require.Equal(t, "cust-7", *read.First.ConcurrencyKey)
		require.Equal(t, "cust-8", *read.Other.ConcurrencyKey)
		require.Nil(t, read.First.BlockedReason, "a claimed workflow is not blocked")
		require.NotNil(t, read.Second.BlockedReason)
		require.Equal(t, "concurrency key cust-7: 1 of 1 running", *read.Second.BlockedReason)

		b.must(t, listFlows, &list, nil)
		require.Len(t, list.FlowControls, 1)
		counts := map[string][2]int{}
		for _, k := range list.FlowControls[0].Keys {
			counts[*k.Key] = [2]int{k.Running, k.Waiting}
		}
		require.Equal(t, map[string][2]int{"cust-7": {1, 1}, "cust-8": {1, 0}}, counts)

		var cleared struct {
			ClearFlowControl struct{ FlowControl *flowControlJSON }
		}
		b.must(t, `mutation { clearFlowControl(input: {type: "test.flow"}) { flowControl { type } } }`, &cleared, nil)
		require.Nil(t, cleared.ClearFlowControl.FlowControl)
		b.must(t, listFlows, &list, nil)
		require.Empty(t, list.FlowControls)

		// Each change is in the audit log (written with it), with its type and settings; a clear
		// of nothing writes none.
		b.must(t, `mutation { clearFlowControl(input: {type: "test.flow"}) { flowControl { type } } }`, &cleared, nil)
		var audit struct {
			AuditLog struct {
				Items []struct {
					Actor, Action, Subject string
					Details                map[string]any
				}
			}
		}
		b.must(t, `{ auditLog(first: 10) { items { actor action subject details } } }`, &audit, nil)
		var acts []string
		for _, e := range audit.AuditLog.Items {
			if e.Subject == "test.flow" {
				acts = append(acts, e.Action)
			}
		}
		require.Equal(t, []string{"clearFlowControl", "setFlowControl"}, acts, "newest first: %+v", audit.AuditLog.Items)
		require.Contains(t, audit.AuditLog.Items[1].Details, "concurrency", "the settings set")
	})
}

// A start with a debounce key folds into the workflow of its type and key that has not run yet
// (its input replaced, due one period after the last start), in one call or across calls; another
// key starts its own; a bad period names its field and starts nothing.
func TestStartDebounced(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		b := setup(t, store)
		start := `mutation($in: StartWorkflowInput!) { startWorkflow(input: $in) { created debounced workflow { id input nextActivation } } }`
		type payload struct {
			Created, Debounced bool
			Workflow           struct {
				ID             string
				Input          map[string]any
				NextActivation string
			}
		}
		var first, second, other struct{ StartWorkflow payload }
		deb := func(key string, n int) map[string]any {
			return map[string]any{"in": map[string]any{"type": "test.flow", "input": map[string]any{"n": n},
				"debounce": map[string]any{"key": key, "period": "PT1H"}}}
		}
		b.must(t, start, &first, deb("k1", 1))
		require.True(t, first.StartWorkflow.Created)
		require.False(t, first.StartWorkflow.Debounced)
		b.must(t, start, &second, deb("k1", 2))
		require.True(t, second.StartWorkflow.Debounced)
		require.False(t, second.StartWorkflow.Created)
		require.Equal(t, first.StartWorkflow.Workflow.ID, second.StartWorkflow.Workflow.ID)
		require.Equal(t, map[string]any{"n": float64(2)}, second.StartWorkflow.Workflow.Input, "the latest input wins")
		at := func(p payload) time.Time {
			v, err := time.Parse(time.RFC3339Nano, p.Workflow.NextActivation)
			require.NoError(t, err)
			return v
		}
		require.False(t, at(second.StartWorkflow).Before(at(first.StartWorkflow)), "due one period after the last start")
		require.True(t, at(first.StartWorkflow).After(time.Now().Add(50*time.Minute)), "due one period after the start")
		b.must(t, start, &other, deb("k2", 3))
		require.True(t, other.StartWorkflow.Created)
		require.NotEqual(t, first.StartWorkflow.Workflow.ID, other.StartWorkflow.Workflow.ID)

		var many struct{ StartWorkflows struct{ Results []payload } }
		in := func(n int) map[string]any {
			return map[string]any{"type": "test.flow", "input": map[string]any{"n": n}, "debounce": map[string]any{"key": "k3", "period": "1m"}}
		}
		b.must(t, `mutation($in: StartWorkflowsInput!) { startWorkflows(input: $in) { results { created debounced workflow { id input nextActivation } } } }`,
			&many, map[string]any{"in": map[string]any{"workflows": []any{in(1), in(2)}}})
		require.Len(t, many.StartWorkflows.Results, 2)
		require.True(t, many.StartWorkflows.Results[1].Debounced)
		require.Equal(t, many.StartWorkflows.Results[0].Workflow.ID, many.StartWorkflows.Results[1].Workflow.ID)

		before, err := store.WorkflowCount(ctx, persistence.WorkflowFilter{})
		require.NoError(t, err)
		bad := deb("k4", 1)
		bad["in"].(map[string]any)["debounce"] = map[string]any{"key": "k4", "period": "soon"}
		e := b.fails(t, "INVALID_INPUT", start, bad)
		require.Equal(t, "debounce.period", e.Extensions["field"])
		after, err := store.WorkflowCount(ctx, persistence.WorkflowFilter{})
		require.NoError(t, err)
		require.Equal(t, before, after)
		require.EqualValues(t, 3, after, "k1, k2 and k3: one workflow each")
	})
}
