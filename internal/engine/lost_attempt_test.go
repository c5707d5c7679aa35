package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// poisonGroup is the executor group of the tests' node-killing steps, so that runDue (the default
// group) never runs them.
const poisonGroup = "poison"

// registerPoison registers a definition whose one step never returns here: each attempt is claimed
// by an executor that then dies. withErrorState adds an ERROR state.
func registerPoison(t *testing.T, engine *engine.Engine, typ string, withErrorState bool) {
	t.Helper()
	states := []workflow.State{
		{Name: "explode", Kind: workflow.Start, Next: []string{"done"}, Retry: &workflow.RetryPolicy{MaxAttempts: 3, MinBackoff: time.Hour, MaxBackoff: time.Hour},
			Handler: func(workflow.StepContext) (workflow.Next, error) { return workflow.Finish(), nil }},
		{Name: "done", Kind: workflow.End},
	}
	if withErrorState {
		states = append(states, workflow.State{Name: "failed", Kind: workflow.ErrorKind})
	}
	_, err := engine.Register(context.Background(), workflow.Definition{Type: typ, ExecutorGroup: poisonGroup, States: states})
	require.NoError(t, err)
}

// dieHolding claims the workflow by an executor whose heartbeat has already expired (its node died
// in the step), then lets a live executor recover it, as any live node's maintenance does.
func dieHolding(t *testing.T, store *persistence.Store, engine *engine.Engine, id int64) {
	t.Helper()
	live := claimOnADeadNode(t, store, engine, id)
	n, err := engine.Recover(context.Background(), recoverParams{ExecutorID: live.ID})
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

// claimOnADeadNode has an executor whose heartbeat already ran out claim the one due workflow of
// the poison group, id, and returns a live executor to recover it.
func claimOnADeadNode(t *testing.T, store *persistence.Store, engine *engine.Engine, id int64) *persistence.Executor {
	t.Helper()
	ctx := context.Background()
	dead, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "doomed", PID: 1, Group: poisonGroup, Expiry: -time.Second})
	require.NoError(t, err)
	claimed, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: dead.ID, Group: poisonGroup, Limit: 10,
		Now: persistence.Now(), StepDeadline: persistence.Now().Add(time.Minute), Types: engine.Types(poisonGroup)})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.Equal(t, id, claimed[0].ID)
	live, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "survivor", PID: 2, Group: poisonGroup, Expiry: time.Hour})
	require.NoError(t, err)
	return live
}

// requireNodeDiedProblem checks that text is the Problem of an attempt whose node died.
func requireNodeDiedProblem(t *testing.T, text *string) {
	t.Helper()
	require.NotNil(t, text)
	var p workflow.Problem
	require.NoError(t, json.Unmarshal([]byte(*text), &p), *text)
	require.Equal(t, workflow.ProblemTypeRuntime, p.Type)
	require.Equal(t, "node died", p.Title)
	require.Contains(t, p.Detail, `"explode"`)
}

// An attempt whose node died counts: a workflow that kills every node that runs it is due again
// while its policy allows, and ends in its ERROR state (FAILED) after the last attempt, each
// attempt a LOST task instance with its Problem. Its parent, waiting for it, wakes.
func TestAttemptsWhoseNodeDiedCount(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		parent, id := startParentOfPoison(t, store, engine, "t.parent", "t.poison")

		for attempt := 1; attempt <= 2; attempt++ {
			dieHolding(t, store, engine, id)
			w, err := store.WorkflowGet(ctx, id)
			require.NoError(t, err)
			require.Equal(t, persistence.StatusInProgress, w.Status, "attempt %d", attempt)
			require.Equal(t, "explode", w.State)
			require.Equal(t, attempt, w.Retries)
			require.Nil(t, w.ExecutorID)
			requireNodeDiedProblem(t, w.LastError)
			require.Equal(t, "node died", (*w.StateText)[:len("node died")])
		}
		dieHolding(t, store, engine, id)
		w, err := store.WorkflowGet(ctx, id)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusFailed, w.Status)
		require.Equal(t, "failed", w.State)
		require.NotNil(t, w.Finished)
		requireNodeDiedProblem(t, w.LastError)

		tasks, err := store.TaskInstanceList(ctx, persistence.TaskInstanceListParams{WorkflowIDs: []int64{id}})
		require.NoError(t, err)
		require.Len(t, tasks, 3)
		for i, ti := range tasks {
			require.Equal(t, persistence.TaskLost, ti.Status)
			require.Equal(t, i+1, ti.Attempt)
			requireNodeDiedProblem(t, ti.Error)
		}
		actions, err := store.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: []int64{id}})
		require.NoError(t, err)
		last := actions[len(actions)-1]
		require.Equal(t, persistence.ActionRecovery, last.Type)
		require.Equal(t, "failed", last.State)
		require.NotContains(t, *last.StateText, "{", "the state text is the Problem's summary, not its JSON")

		p, err := store.WorkflowGet(ctx, parent)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusInProgress, p.Status, "the parent waiting for its child woke when the child failed")
		runDue(t, store, engine)
		p, err = store.WorkflowGet(ctx, parent)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusFinished, p.Status)
	})
}

// Without an ERROR state, the last lost attempt leaves the workflow MANUAL, as a failed attempt
// that was its last does.
func TestAttemptsWhoseNodeDiedEndManualWithoutAnErrorState(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		registerPoison(t, engine, "t.poison.manual", false)
		res, err := engine.Start(ctx, workflow.StartParams{Type: "t.poison.manual"})
		require.NoError(t, err)
		id := res.Workflow.ID
		for range 3 {
			dieHolding(t, store, engine, id)
		}
		w, err := store.WorkflowGet(ctx, id)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusManual, w.Status)
		require.Equal(t, "explode", w.State)
		require.Equal(t, 3, w.Retries)
		require.Nil(t, w.Finished)
		requireNodeDiedProblem(t, w.LastError)
	})
}

// A pool that stops and lets go of a step it could not drain spends none of its workflow's
// attempts: the workflow did not kill the node.
func TestStepReleasedAtShutdownIsNotCounted(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		registerPoison(t, engine, "t.poison.release", true)
		res, err := engine.Start(ctx, workflow.StartParams{Type: "t.poison.release"})
		require.NoError(t, err)
		exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: poisonGroup, Expiry: time.Hour})
		require.NoError(t, err)
		claimed, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: poisonGroup, Limit: 1,
			Now: persistence.Now(), StepDeadline: persistence.Now().Add(time.Minute), Types: engine.Types(poisonGroup)})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		require.NoError(t, store.ExecutorStop(ctx, exec.ID))
		n, err := engine.Recover(ctx, recoverParams{ExecutorID: exec.ID, Stopping: true})
		require.NoError(t, err)
		require.Equal(t, 1, n)
		w, err := store.WorkflowGet(ctx, res.Workflow.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusInProgress, w.Status)
		require.Zero(t, w.Retries)
		require.Nil(t, w.LastError)
	})
}

// A node frozen past its expiry (say thrashing on a workflow's memory) that wakes and runs recovery
// itself finds its own step orphaned: that attempt counts like any whose node was declared dead.
func TestFrozenNodesOwnRecoveryCountsItsStep(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		registerPoison(t, engine, "t.poison.frozen", true)
		res, err := engine.Start(ctx, workflow.StartParams{Type: "t.poison.frozen"})
		require.NoError(t, err)
		frozen, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: poisonGroup, Expiry: -time.Second})
		require.NoError(t, err)
		claimed, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: frozen.ID, Group: poisonGroup, Limit: 1,
			Now: persistence.Now(), StepDeadline: persistence.Now().Add(time.Minute), Types: engine.Types(poisonGroup)})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		n, err := engine.Recover(ctx, recoverParams{ExecutorID: frozen.ID})
		require.NoError(t, err)
		require.Equal(t, 1, n)
		w, err := store.WorkflowGet(ctx, res.Workflow.ID)
		require.NoError(t, err)
		require.Equal(t, 1, w.Retries)
		requireNodeDiedProblem(t, w.LastError)
	})
}

// A child whose last lost attempt ends it wakes its parent, but recovery never waits for a parent
// another transaction holds while it holds the child: cancelling a parent locks the parent, then its
// children, so waiting would deadlock. The child is left to the next pass, which ends it and wakes
// the parent. (Row locks: PostgreSQL and MariaDB; SQLite has one writer and no row locks.)
func TestRecoveryNeverWaitsForABusyParent(t *testing.T) {
	t.Parallel()
	dbtest.ForKinds(t, []persistence.Kind{persistence.KindPostgres, persistence.KindMySQL}, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		parent, child := startParentOfPoison(t, store, engine, "t.parent.busy", "t.poison.child")
		dieHolding(t, store, engine, child)
		dieHolding(t, store, engine, child)

		// The last attempt's node dies while another transaction holds the parent, as a
		// cancellation does before it locks the children.
		live := claimOnADeadNode(t, store, engine, child)
		locked, release := make(chan struct{}), make(chan struct{})
		holder := make(chan error, 1)
		go func() {
			holder <- store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
				if _, err := tx.WorkflowGetForUpdate(ctx, parent); err != nil {
					return err
				}
				close(locked)
				<-release
				_, err := tx.WorkflowGetForUpdate(ctx, child) // then the child, as a cancellation does
				return err
			})
		}()
		<-locked
		// Bounded only so that a recovery that waits for the parent fails here instead of hanging.
		rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		n, err := engine.Recover(rctx, recoverParams{ExecutorID: live.ID})
		cancel()
		close(release)
		require.NoError(t, err, "recovery waited for the busy parent")
		require.Zero(t, n, "the child is left to the next pass")
		require.NoError(t, <-holder)
		w, err := store.WorkflowGet(ctx, child)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusExecuting, w.Status)

		n, err = engine.Recover(ctx, recoverParams{ExecutorID: live.ID})
		require.NoError(t, err)
		require.Equal(t, 1, n)
		w, err = store.WorkflowGet(ctx, child)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusFailed, w.Status)
		p, err := store.WorkflowGet(ctx, parent)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusInProgress, p.Status, "the parent woke")
	})
}

// startParentOfPoison registers a parent type whose first step starts a child of a poison type
// (registerPoison) and waits for it, starts one, runs what is due, and returns the parent's ID
// and its child's.
func startParentOfPoison(t *testing.T, store *persistence.Store, engine *engine.Engine, parentType, childType string) (parent, child int64) {
	t.Helper()
	ctx := context.Background()
	registerPoison(t, engine, childType, true)
	_, err := engine.Register(ctx, workflow.Definition{Type: parentType, States: []workflow.State{
		{Name: "spawn", Kind: workflow.Start, Next: []string{"await"}, Handler: func(sc workflow.StepContext) (workflow.Next, error) {
			sc.StartChild(workflow.ChildRequest{Type: childType})
			return workflow.MoveTo("await"), nil
		}},
		{Name: "await", Kind: workflow.Wait, WaitFor: &workflow.WaitFor{Children: true}, Next: []string{"done"}},
		{Name: "done", Kind: workflow.End},
	}})
	require.NoError(t, err)
	started, err := engine.Start(ctx, workflow.StartParams{Type: parentType})
	require.NoError(t, err)
	runDue(t, store, engine)
	kids, _, err := store.WorkflowList(ctx, persistence.WorkflowListParams{Filter: persistence.WorkflowFilter{ParentID: &started.Workflow.ID}, Limit: 10})
	require.NoError(t, err)
	require.Len(t, kids, 1)
	return started.Workflow.ID, kids[0].ID
}
