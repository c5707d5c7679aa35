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

func step(ctx workflow.StepContext) (workflow.Next, error) { return workflow.Finish(), nil }

func TestValidateNamesTheStateAtFault(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		def  workflow.Definition
		want string
	}{
		"no start":            {workflow.Definition{Type: "x", States: []workflow.State{{Name: "a", Kind: workflow.Normal, Handler: step, Next: []string{"e"}}, {Name: "e", Kind: workflow.End}}}, "exactly one START"},
		"unknown next":        {workflow.Definition{Type: "x", States: []workflow.State{{Name: "a", Kind: workflow.Start, Handler: step, Next: []string{"nowhere"}}, {Name: "e", Kind: workflow.End}}}, `state "a" moves to unknown state "nowhere"`},
		"unreachable end":     {workflow.Definition{Type: "x", States: []workflow.State{{Name: "a", Kind: workflow.Start, Handler: step}, {Name: "e", Kind: workflow.End}}}, `no END state is reachable from START state "a"`},
		"missing handler":     {workflow.Definition{Type: "x", States: []workflow.State{{Name: "a", Kind: workflow.Start, Next: []string{"e"}}, {Name: "e", Kind: workflow.End}}}, `state "a" (START) needs a handler`},
		"duplicate":           {workflow.Definition{Type: "x", States: []workflow.State{{Name: "a", Kind: workflow.Start, Handler: step, Next: []string{"e"}}, {Name: "a", Kind: workflow.End}, {Name: "e", Kind: workflow.End}}}, `state "a" is defined twice`},
		"wait without target": {workflow.Definition{Type: "x", States: []workflow.State{{Name: "a", Kind: workflow.Start, Handler: step, Next: []string{"w"}}, {Name: "w", Kind: workflow.Wait, Next: []string{"e"}}, {Name: "e", Kind: workflow.End}}}, `WAIT state "w" must wait for a signal or for children`},
		"unknown kind":        {workflow.Definition{Type: "x", States: []workflow.State{{Name: "a", Kind: workflow.Start, Handler: step, Next: []string{"e"}}, {Name: "e", Kind: "LATER"}}}, `state "e" has unknown kind "LATER"`},
		"end with next":       {workflow.Definition{Type: "x", States: []workflow.State{{Name: "a", Kind: workflow.Start, Handler: step, Next: []string{"e"}}, {Name: "e", Kind: workflow.End, Next: []string{"a"}}}}, `END state "e" cannot have next states`},
		"no type":             {workflow.Definition{States: []workflow.State{{Name: "a", Kind: workflow.Start, Handler: step}}}, "needs a type"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := tc.def.Validate()
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.Equal(t, workflow.CodeInvalidInput, workflow.CodeOf(err))
		})
	}
}

func TestRegisterVersionsChangedDefinitions(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := engine.New(store, engine.Options{})
		def := workflow.Definition{Type: "v", States: []workflow.State{{Name: "a", Kind: workflow.Start, Handler: step, Next: []string{"e"}}, {Name: "e", Kind: workflow.End}}}
		v1, err := engine.Register(ctx, def)
		require.NoError(t, err)
		require.Equal(t, 1, v1.Version)
		same, err := engine.Register(ctx, def)
		require.NoError(t, err)
		require.Equal(t, v1.ID, same.ID, "registering the same content again keeps the version")

		started, err := engine.Start(ctx, workflow.StartParams{Type: "v"})
		require.NoError(t, err)
		require.Equal(t, 1, started.Workflow.DefinitionVersion)

		def.States[0].Timeout = time.Minute
		v2, err := engine.Register(ctx, def)
		require.NoError(t, err)
		require.Equal(t, 2, v2.Version)
		require.NotEqual(t, v1.Checksum, v2.Checksum)

		running, err := store.WorkflowGet(ctx, started.Workflow.ID)
		require.NoError(t, err)
		require.Equal(t, 1, running.DefinitionVersion, "a running workflow keeps its version")
		next, err := engine.Start(ctx, workflow.StartParams{Type: "v"})
		require.NoError(t, err)
		require.Equal(t, 2, next.Workflow.DefinitionVersion)

		_, err = engine.Register(ctx, workflow.Definition{Type: "bad", States: []workflow.State{{Name: "a", Kind: workflow.Start, Handler: step}}})
		require.Error(t, err)
		_, err = store.DefinitionGet(ctx, persistence.DefinitionGetParams{Type: "bad"})
		require.ErrorIs(t, err, persistence.ErrNotFound, "an invalid definition is not stored")
	})
}

func TestBackoffGrowsAndIsCapped(t *testing.T) {
	t.Parallel()
	p := workflow.RetryPolicy{MaxAttempts: 10, MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}
	require.Equal(t, 100*time.Millisecond, p.Backoff(1))
	require.Equal(t, 200*time.Millisecond, p.Backoff(2))
	require.Equal(t, 400*time.Millisecond, p.Backoff(3))
	require.Equal(t, time.Second, p.Backoff(8))
	p.Jitter = 0.5
	for range 100 {
		d := p.Backoff(2)
		require.GreaterOrEqual(t, d, 100*time.Millisecond)
		require.LessOrEqual(t, d, 300*time.Millisecond)
	}
}
