package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

func attributesOf(t *testing.T, store *persistence.Store, id int64) map[string]any {
	t.Helper()
	m, err := store.WorkflowAttributeMaps(context.Background(), []int64{id})
	require.NoError(t, err)
	out := map[string]any{}
	for n, v := range m[id] {
		out[n] = v.JSONValue()
	}
	return out
}

// Search attributes are set at start, by updates and by steps, each checked against the kind its
// name got at its first use; a refused request writes nothing.
func TestSearchAttributesFromStartUpdateAndSteps(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		_, err := engine.Register(ctx, workflow.Definition{Type: "t.attrs", States: []workflow.State{
			{Name: "tag", Kind: workflow.Start, Next: []string{"done"}, Handler: func(c workflow.StepContext) (workflow.Next, error) {
				if err := c.SetAttribute("ea.amount", "not a number"); workflow.CodeOf(err) != workflow.CodeInvalidInput {
					return workflow.Next{}, fmt.Errorf("a string for a number attribute: %v", err)
				}
				if err := c.SetAttribute("ea.stage", "tagged"); err != nil {
					return workflow.Next{}, err
				}
				if err := c.SetAttribute("ea.when", time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)); err != nil {
					return workflow.Next{}, err
				}
				if err := c.SetAttribute("ea.vip", nil); err != nil {
					return workflow.Next{}, err
				}
				return workflow.MoveTo("done"), nil
			}},
			{Name: "done", Kind: workflow.End},
		}})
		require.NoError(t, err)

		start := func(attrs string) (workflow.StartResult, error) {
			return engine.Start(ctx, workflow.StartParams{Type: "t.attrs", Attributes: json.RawMessage(attrs)})
		}
		r, err := start(`{"ea.region": "eu-west", "ea.amount": 12.5, "ea.vip": true, "ea.due": "2026-01-02T03:04:05.123456789+01:00"}`)
		require.NoError(t, err)
		id := r.Workflow.ID
		require.Equal(t, map[string]any{"ea.region": "eu-west", "ea.amount": 12.5, "ea.vip": true, "ea.due": "2026-01-02T02:04:05.123456Z"},
			attributesOf(t, store, id))

		before, err := store.WorkflowCount(ctx, persistence.WorkflowFilter{Types: []string{"t.attrs"}})
		require.NoError(t, err)
		for _, c := range []struct{ attrs, field string }{
			{`{"ea.amount": "12"}`, "attributes.ea.amount"},                               // a string for a number
			{`{"ea.due": "tomorrow"}`, "attributes.ea.due"},                               // not a time
			{`{"ea.vip": 1}`, "attributes.ea.vip"},                                        // a number for a boolean
			{`{"ea.region": {"a": 1}}`, "attributes.ea.region"},                           // not a scalar
			{`{"ea.new": [1]}`, "attributes.ea.new"},                                      // not a scalar, new name
			{`{"bad name": 1}`, "attributes.bad name"},                                    // not a name
			{`{"ea.region": null}`, "attributes.ea.region"},                               // null at start
			{`{"ea.region": "` + strings.Repeat("x", 256) + `"}`, "attributes.ea.region"}, // too long
			{`[1]`, "attributes"},
		} {
			_, err := start(c.attrs)
			requireCode(t, err, workflow.CodeInvalidInput, c.field)
		}
		many := map[string]int{}
		for i := range workflow.MaxAttributes + 1 {
			many[fmt.Sprintf("ea.n%d", i)] = i
		}
		b, _ := json.Marshal(many)
		_, err = start(string(b))
		requireCode(t, err, workflow.CodeInvalidInput, "attributes")
		after, err := store.WorkflowCount(ctx, persistence.WorkflowFilter{Types: []string{"t.attrs"}})
		require.NoError(t, err)
		require.Equal(t, before, after, "a refused start starts nothing")

		// A time-looking string stays a string where the name holds strings.
		_, err = start(`{"ea.region": "2026-01-01T00:00:00Z"}`)
		require.NoError(t, err)

		// An update merges; null removes.
		_, err = engine.Update(ctx, workflow.UpdateParams{ChangeParams: workflow.ChangeParams{ID: id}, Attributes: json.RawMessage(`{"ea.amount": 99, "ea.region": null}`)})
		require.NoError(t, err)
		require.Equal(t, map[string]any{"ea.amount": 99.0, "ea.vip": true, "ea.due": "2026-01-02T02:04:05.123456Z"}, attributesOf(t, store, id))
		_, err = engine.Update(ctx, workflow.UpdateParams{ChangeParams: workflow.ChangeParams{ID: id}, Attributes: json.RawMessage(`{"ea.amount": true}`)})
		requireCode(t, err, workflow.CodeInvalidInput, "attributes.ea.amount")
		require.Equal(t, 99.0, attributesOf(t, store, id)["ea.amount"], "a refused update changes nothing")

		// A step sets and removes attributes with its outcome.
		runDue(t, store, engine)
		w, err := store.WorkflowGet(ctx, id)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusFinished, w.Status, "%v", w.LastError)
		require.Equal(t, map[string]any{"ea.amount": 99.0, "ea.due": "2026-01-02T02:04:05.123456Z", "ea.stage": "tagged",
			"ea.when": "2026-05-01T12:00:00Z"}, attributesOf(t, store, id))
	})
}
