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

// Starts keep the newest version of a type between reads, and see a change made on their node at
// once: a release state set, a changed definition registered (a deployed document: TestDeployVersions).
func TestStartsSeeDefinitionChangesAtOnce(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		e := newEngine(t, store)
		_, err := e.Register(ctx, described("t.newest", "one"))
		require.NoError(t, err)
		started := func() int {
			t.Helper()
			r, err := e.Start(ctx, workflow.StartParams{Type: "t.newest"})
			require.NoError(t, err)
			return r.Workflow.DefinitionVersion
		}
		require.Equal(t, 1, started())

		_, err = e.SetReleaseState(ctx, "t.newest", persistence.ReleaseOffline, "")
		require.NoError(t, err)
		_, err = e.Start(ctx, workflow.StartParams{Type: "t.newest"})
		requireCode(t, err, workflow.CodeConflict, "type")
		_, err = e.SetReleaseState(ctx, "t.newest", persistence.ReleaseOnline, "")
		require.NoError(t, err)
		require.Equal(t, 1, started())

		_, err = e.Register(ctx, described("t.newest", "two"))
		require.NoError(t, err)
		require.Equal(t, 2, started())
	})
}

// Two nodes sharing a PostgreSQL: a release state set on one applies to the other's starts within
// the time a start keeps the newest version (on PostgreSQL a hint makes it sooner).
func TestStartsSeeDefinitionChangesOfOtherNodes(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		nodes := make([]*engine.Engine, 2)
		for i := range nodes {
			n := persistence.NewNotifier(store, nil)
			done := make(chan struct{})
			go func() { defer close(done); n.Run(ctx) }()
			t.Cleanup(func() { cancel(); <-done })
			nodes[i] = engine.New(store, engine.Options{Notifier: n})
			listening := make(chan struct{})
			go func() { close(listening); nodes[i].RunCancelListener(ctx) }()
			<-listening
		}
		a, b := nodes[0], nodes[1]
		for _, e := range nodes {
			oneStep(t, e, "t.shared", func(workflow.StepContext) error { return nil })
		}
		_, err := b.Start(ctx, workflow.StartParams{Type: "t.shared"})
		require.NoError(t, err)

		_, err = a.SetReleaseState(ctx, "t.shared", persistence.ReleaseOffline, "")
		require.NoError(t, err)
		set := time.Now()
		require.Eventually(t, func() bool {
			_, err := b.Start(ctx, workflow.StartParams{Type: "t.shared"})
			return workflow.CodeOf(err) == workflow.CodeConflict
		}, 5*time.Second, 10*time.Millisecond, "the other node refuses starts of the OFFLINE type")
		took := time.Since(set)
		t.Logf("the other node refused starts %v after the change", took)
		if store.Capabilities().Listen {
			// The hint, not the end of the second the other node keeps the version for.
			require.Less(t, took, time.Second)
		}
	})
}

// described is a definition of one step that ends the workflow; another description makes another
// version.
func described(typ, description string) workflow.Definition {
	return workflow.Definition{Type: typ, Description: description, States: []workflow.State{
		{Name: "go", Kind: workflow.Start, Next: []string{"done"}, Handler: func(workflow.StepContext) (workflow.Next, error) {
			return workflow.MoveTo("done"), nil
		}},
		{Name: "done", Kind: workflow.End},
		{Name: "failed", Kind: workflow.ErrorKind},
	}}
}
