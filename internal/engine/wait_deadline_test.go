package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// stepDue claims the due workflows of some types once, runs their steps and writes the outcomes.
func stepDue(t *testing.T, engine *engine.Engine, store *persistence.Store, types ...string) int {
	t.Helper()
	ctx := context.Background()
	e, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "test", PID: 1, Group: workflow.DefaultGroup, Expiry: time.Hour})
	require.NoError(t, err)
	ws, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: e.ID, Group: workflow.DefaultGroup, Limit: 10,
		Now: persistence.Now(), StepDeadline: persistence.Now().Add(time.Minute), Types: types})
	require.NoError(t, err)
	var outcomes []*outcome
	for _, w := range ws {
		outcomes = append(outcomes, engine.Execute(ctx, executeParams{Workflow: w, ExecutorID: e.ID, Host: "test"}))
	}
	_, err = engine.Complete(ctx, outcomes)
	require.NoError(t, err)
	return len(ws)
}

// A WAIT state with a deadline variable: entered with MoveToAt, it is woken at the deadline and
// its handler runs without a signal; before the deadline, a signal wakes it as usual.
func TestWaitDeadlineVariable(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		_, err := engine.Register(ctx, workflow.Definition{Type: "t.deadline", States: []workflow.State{
			{Name: "arm", Kind: workflow.Start, Next: []string{"listen"}, Handler: func(c workflow.StepContext) (workflow.Next, error) {
				var in struct {
					In time.Duration `json:"in"`
				}
				if err := c.Input(&in); err != nil {
					return workflow.Next{}, err
				}
				until := time.Now().Add(in.In)
				if err := c.SetVar("until", until); err != nil {
					return workflow.Next{}, err
				}
				return workflow.MoveToAt("listen", until), nil
			}},
			{Name: "listen", Kind: workflow.Wait, WaitFor: &workflow.WaitFor{Signal: "go", DeadlineVariable: "until"}, Next: []string{"heard", "timedOut"},
				Handler: func(c workflow.StepContext) (workflow.Next, error) {
					if c.Signal() == nil {
						return workflow.MoveTo("timedOut"), nil
					}
					return workflow.MoveTo("heard"), nil
				}},
			{Name: "heard", Kind: workflow.End},
			{Name: "timedOut", Kind: workflow.End},
		}})
		require.NoError(t, err)

		late, err := engine.Start(ctx, workflow.StartParams{Type: "t.deadline", Input: []byte(`{"in": -1000000000}`)})
		require.NoError(t, err)
		early, err := engine.Start(ctx, workflow.StartParams{Type: "t.deadline", Input: []byte(`{"in": 3600000000000}`)})
		require.NoError(t, err)
		require.Equal(t, 2, stepDue(t, engine, store, "t.deadline"))

		w, err := store.WorkflowGet(ctx, early.Workflow.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusWaiting, w.Status)
		require.NotNil(t, w.NextActivation, "woken at its deadline")
		require.WithinDuration(t, time.Now().Add(time.Hour), *w.NextActivation, time.Minute)

		require.Equal(t, 1, stepDue(t, engine, store, "t.deadline"), "only the one whose deadline passed is due")
		w, err = store.WorkflowGet(ctx, late.Workflow.ID)
		require.NoError(t, err)
		require.Equal(t, "timedOut", w.State)

		_, err = engine.Signal(ctx, workflow.SignalParams{ID: early.Workflow.ID, Name: "go"})
		require.NoError(t, err)
		require.Equal(t, 1, stepDue(t, engine, store, "t.deadline"))
		w, err = store.WorkflowGet(ctx, early.Workflow.ID)
		require.NoError(t, err)
		require.Equal(t, "heard", w.State)
	})
}

// A child may run a given version of its definition, not only the newest.
func TestChildOfAVersion(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		child := func(start string) workflow.Definition {
			return workflow.Definition{Type: "t.versioned", States: []workflow.State{
				{Name: start, Kind: workflow.Start, Next: []string{"done"}, Handler: func(c workflow.StepContext) (workflow.Next, error) {
					return workflow.Finish(), nil
				}},
				{Name: "done", Kind: workflow.End},
			}}
		}
		v1, err := engine.Register(ctx, child("first"))
		require.NoError(t, err)
		v2, err := engine.Register(ctx, child("second"))
		require.NoError(t, err)
		require.Greater(t, v2.Version, v1.Version)
		_, err = engine.Register(ctx, workflow.Definition{Type: "t.spawner", States: []workflow.State{
			{Name: "spawn", Kind: workflow.Start, Next: []string{"join"}, Handler: func(c workflow.StepContext) (workflow.Next, error) {
				c.StartChild(workflow.ChildRequest{Type: "t.versioned", Version: v1.Version})
				c.StartChild(workflow.ChildRequest{Type: "t.versioned"})
				return workflow.MoveTo("join"), nil
			}},
			{Name: "join", Kind: workflow.Wait, WaitFor: &workflow.WaitFor{Children: true}, Next: []string{"done"}},
			{Name: "done", Kind: workflow.End},
		}})
		require.NoError(t, err)
		parent, err := engine.Start(ctx, workflow.StartParams{Type: "t.spawner"})
		require.NoError(t, err)
		require.Equal(t, 1, stepDue(t, engine, store, "t.spawner"))
		id := parent.Workflow.ID
		children, _, err := store.WorkflowList(ctx, persistence.WorkflowListParams{Filter: persistence.WorkflowFilter{ParentID: &id}, Limit: 10})
		require.NoError(t, err)
		require.Len(t, children, 2)
		got := map[int]string{}
		for _, c := range children {
			got[c.DefinitionVersion] = c.State
		}
		require.Equal(t, map[int]string{v1.Version: "first", v2.Version: "second"}, got)
	})
}
