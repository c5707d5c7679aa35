package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// small are limits a test reaches with small values.
var small = workflow.Limits{ValueBytes: 100, VariablesBytes: 170, Steps: 5, ChildDepth: 3, ChildrenPerStep: 2, Children: 3}

func limitedEngine(t *testing.T, store *persistence.Store, l workflow.Limits) *engine.Engine {
	t.Helper()
	return engine.New(store, engine.Options{Limits: l})
}

// oneStep registers a definition whose start state runs step and then finishes, with an ERROR
// state and the default retry policy (5 attempts).
func oneStep(t *testing.T, engine *engine.Engine, typ string, step func(sc workflow.StepContext) error) {
	t.Helper()
	_, err := engine.Register(context.Background(), workflow.Definition{Type: typ, States: []workflow.State{
		{Name: "go", Kind: workflow.Start, Next: []string{"done"}, Handler: func(sc workflow.StepContext) (workflow.Next, error) {
			if err := step(sc); err != nil {
				return workflow.Next{}, err
			}
			return workflow.Finish(), nil
		}},
		{Name: "done", Kind: workflow.End},
		{Name: "broken", Kind: workflow.ErrorKind},
	}})
	require.NoError(t, err)
}

func tasksOf(t *testing.T, store *persistence.Store, id int64) []*persistence.TaskInstance {
	t.Helper()
	tasks, err := store.TaskInstanceList(context.Background(), persistence.TaskInstanceListParams{WorkflowIDs: []int64{id}, Page: persistence.PageParams{Limit: 100}})
	require.NoError(t, err)
	return tasks
}

// A step that writes more than the limits allow (a variable, the variables together, its output,
// a child's input, too many children) fails at once, without a retry, into its ERROR state; the
// lastError names the limit, nothing it wrote is stored, even when the handler ignored the error
// SetVar gave it. A step within the limits finishes.
func TestStepWritesAreBounded(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := limitedEngine(t, store, small)
		big := strings.Repeat("x", 120)
		var mu sync.Mutex
		var setVarErr error
		cases := []struct {
			typ, flag string
			step      func(sc workflow.StepContext) error
		}{
			{"big.var", "--max-value-bytes", func(sc workflow.StepContext) error {
				mu.Lock()
				defer mu.Unlock()
				setVarErr = sc.SetVar("v", big) // ignored: the attempt fails all the same
				return nil
			}},
			{"big.vars", "--max-variables-bytes", func(sc workflow.StepContext) error {
				for i := range 3 {
					if err := sc.SetVar(fmt.Sprintf("v%d", i), strings.Repeat("y", 80)); err != nil {
						return err
					}
				}
				return nil
			}},
			{"big.output", "--max-value-bytes", func(sc workflow.StepContext) error { return sc.SetOutput(big) }},
			{"big.child", "--max-value-bytes", func(sc workflow.StepContext) error {
				sc.StartChild(workflow.ChildRequest{Type: "fits", Input: json.RawMessage(`{"a":"` + big + `"}`)})
				return nil
			}},
			{"children.inputs", "--max-variables-bytes", func(sc workflow.StepContext) error {
				for range 2 {
					sc.StartChild(workflow.ChildRequest{Type: "fits", Input: json.RawMessage(`{"a":"` + strings.Repeat("c", 80) + `"}`)})
				}
				return nil
			}},
			{"many.children", "--max-children-per-step", func(sc workflow.StepContext) error {
				for range 3 {
					sc.StartChild(workflow.ChildRequest{Type: "fits"})
				}
				return nil
			}},
		}
		oneStep(t, engine, "fits", func(sc workflow.StepContext) error {
			return firstErr(sc.SetVar("a", strings.Repeat("z", 60)), sc.SetVar("b", strings.Repeat("z", 60)), sc.SetOutput("ok"))
		})
		ids := map[string]int64{}
		for _, tc := range cases {
			oneStep(t, engine, tc.typ, tc.step)
			res, err := engine.Start(ctx, workflow.StartParams{Type: tc.typ})
			require.NoError(t, err)
			ids[tc.typ] = res.Workflow.ID
		}
		fits, err := engine.Start(ctx, workflow.StartParams{Type: "fits"})
		require.NoError(t, err)

		runDue(t, store, engine)

		for _, tc := range cases {
			w, err := store.WorkflowGet(ctx, ids[tc.typ])
			require.NoError(t, err)
			require.Equal(t, persistence.StatusFailed, w.Status, tc.typ)
			require.Equal(t, "broken", w.State, tc.typ)
			require.NotNil(t, w.LastError, tc.typ)
			require.Contains(t, *w.LastError, tc.flag, tc.typ)
			require.JSONEq(t, `{}`, string(w.Variables), "%s: nothing of the step is stored", tc.typ)
			require.Len(t, tasksOf(t, store, w.ID), 1, "%s: a write that is too large is not retried", tc.typ)
			children, _, err := store.WorkflowList(ctx, persistence.WorkflowListParams{Filter: persistence.WorkflowFilter{ParentID: &w.ID}, Limit: 10})
			require.NoError(t, err)
			require.Empty(t, children, tc.typ)
		}
		mu.Lock()
		require.Error(t, setVarErr)
		require.True(t, workflow.IsNonRetryable(setVarErr))
		var le *workflow.LimitError
		require.ErrorAs(t, setVarErr, &le)
		require.Equal(t, "max-value-bytes", le.Flag)
		mu.Unlock()

		w, err := store.WorkflowGet(ctx, fits.Workflow.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusFinished, w.Status, "within the limits: %v", w.LastError)
	})
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// The operations refuse values over the limits with INVALID_INPUT naming the field, and change
// nothing: a start's input and variables, an update's variables (one, or all of them together),
// a signal's payload, a form's data, a schedule's input.
func TestOperationsRefuseValuesOverTheLimits(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := limitedEngine(t, store, small)
		_, err := engine.Register(ctx, workflow.Definition{Type: "form", States: []workflow.State{
			{Name: "go", Kind: workflow.Start, Next: []string{"fill"}, Handler: func(workflow.StepContext) (workflow.Next, error) { return workflow.MoveTo("fill"), nil }},
			{Name: "fill", Kind: workflow.Manual, Next: []string{"done"}, FormSchema: json.RawMessage(`{"type": "object"}`)},
			{Name: "done", Kind: workflow.End},
		}})
		require.NoError(t, err)
		big := `"` + strings.Repeat("x", 120) + `"`
		_, err = engine.Start(ctx, workflow.StartParams{Type: "form", Input: json.RawMessage(`{"a":` + big + `}`)})
		requireCode(t, err, workflow.CodeInvalidInput, "input")
		_, err = engine.Start(ctx, workflow.StartParams{Type: "form", Variables: json.RawMessage(`{"a":` + big + `}`)})
		requireCode(t, err, workflow.CodeInvalidInput, "variables")
		_, err = engine.StartMany(ctx, []workflow.StartParams{{Type: "form"}, {Type: "form", Input: json.RawMessage(`{"a":` + big + `}`)}})
		requireCode(t, err, workflow.CodeInvalidInput, "workflows[1].input")
		_, err = engine.CreateSchedule(ctx, workflow.ScheduleParams{Type: "form", Cron: "@every 1h", Input: json.RawMessage(`{"a":` + big + `}`)})
		requireCode(t, err, workflow.CodeInvalidInput, "input")
		n, err := store.WorkflowCount(ctx, persistence.WorkflowFilter{})
		require.NoError(t, err)
		require.Zero(t, n, "a refused start starts nothing")

		res, err := engine.Start(ctx, workflow.StartParams{Type: "form", Variables: json.RawMessage(`{"a":"` + strings.Repeat("a", 90) + `"}`)})
		require.NoError(t, err)
		id := res.Workflow.ID
		mid := `"` + strings.Repeat("b", 90) + `"`
		_, err = engine.Update(ctx, workflow.UpdateParams{ChangeParams: workflow.ChangeParams{ID: id}, Variables: json.RawMessage(`{"b":` + big + `}`)})
		requireCode(t, err, workflow.CodeInvalidInput, "variables")
		_, err = engine.Update(ctx, workflow.UpdateParams{ChangeParams: workflow.ChangeParams{ID: id}, Variables: json.RawMessage(`{"b":` + mid + `,"c":` + mid + `}`)})
		requireCode(t, err, workflow.CodeInvalidInput, "variables")
		_, err = engine.Signal(ctx, workflow.SignalParams{ID: id, Name: "s", Payload: json.RawMessage(`{"a":` + big + `}`)})
		requireCode(t, err, workflow.CodeInvalidInput, "payload")
		_, err = engine.Update(ctx, workflow.UpdateParams{ChangeParams: workflow.ChangeParams{ID: id}, State: ptr("fill")})
		require.NoError(t, err)
		_, err = engine.SubmitForm(ctx, workflow.SubmitFormParams{ID: id, SubmittedBy: "ann", Data: json.RawMessage(`{"a":` + big + `}`)})
		requireCode(t, err, workflow.CodeInvalidInput, "data")
		// Fits alone, but not with the variables the workflow has.
		_, err = engine.SubmitForm(ctx, workflow.SubmitFormParams{ID: id, SubmittedBy: "ann", Data: json.RawMessage(`{"b":"` + strings.Repeat("c", 70) + `"}`)})
		requireCode(t, err, workflow.CodeInvalidInput, "data")

		w, err := store.WorkflowGet(ctx, id)
		require.NoError(t, err)
		require.JSONEq(t, `{"a":"`+strings.Repeat("a", 90)+`"}`, string(w.Variables), "nothing changed")
		require.Equal(t, persistence.StatusManual, w.Status)
		sigs, err := store.SignalList(ctx, []int64{id})
		require.NoError(t, err)
		require.Empty(t, sigs)
	})
}

// A retry policy of more than MaxRetryAttempts attempts is refused at registration.
func TestRetryPolicyAttemptsAreCapped(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		engine := limitedEngine(t, store, workflow.Limits{})
		states := func(retry *workflow.RetryPolicy) []workflow.State {
			return []workflow.State{
				{Name: "go", Kind: workflow.Start, Next: []string{"done"}, Retry: retry, Handler: func(workflow.StepContext) (workflow.Next, error) { return workflow.Finish(), nil }},
				{Name: "done", Kind: workflow.End},
			}
		}
		_, err := engine.Register(context.Background(), workflow.Definition{Type: "t.retry", States: states(&workflow.RetryPolicy{MaxAttempts: 2000000000})})
		requireCode(t, err, workflow.CodeInvalidInput, "states")
		_, err = engine.Register(context.Background(), workflow.Definition{Type: "t.retry", States: states(nil),
			DefaultRetry: workflow.RetryPolicy{MaxAttempts: workflow.MaxRetryAttempts + 1}})
		requireCode(t, err, workflow.CodeInvalidInput, "defaultRetry")
		_, err = engine.Register(context.Background(), workflow.Definition{Type: "t.retry", States: states(&workflow.RetryPolicy{MaxAttempts: workflow.MaxRetryAttempts})})
		require.NoError(t, err)
	})
}

// A workflow that never ends (a step that polls for ever, a state that loops into itself) runs
// its step budget and then fails, FAILED with a lastError naming the budget, whether or not its
// definition has an ERROR state. A manual retry gives it a new budget.
func TestStepBudget(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := limitedEngine(t, store, small)
		_, err := engine.Register(ctx, workflow.Definition{Type: "t.poll", States: []workflow.State{
			{Name: "poll", Kind: workflow.Start, Next: []string{"done"}, Handler: func(workflow.StepContext) (workflow.Next, error) { return workflow.RetryAfter(0), nil }},
			{Name: "done", Kind: workflow.End},
			{Name: "broken", Kind: workflow.ErrorKind},
		}})
		require.NoError(t, err)
		_, err = engine.Register(ctx, workflow.Definition{Type: "t.loop", States: []workflow.State{
			{Name: "a", Kind: workflow.Start, Next: []string{"b"}, Handler: func(workflow.StepContext) (workflow.Next, error) { return workflow.MoveTo("b"), nil }},
			{Name: "b", Kind: workflow.Normal, Next: []string{"b", "done"}, Handler: func(workflow.StepContext) (workflow.Next, error) { return workflow.MoveTo("b"), nil }},
			{Name: "done", Kind: workflow.End},
		}})
		require.NoError(t, err)
		poll, err := engine.Start(ctx, workflow.StartParams{Type: "t.poll"})
		require.NoError(t, err)
		loop, err := engine.Start(ctx, workflow.StartParams{Type: "t.loop"})
		require.NoError(t, err)

		runDue(t, store, engine)

		for id, state := range map[int64]string{poll.Workflow.ID: "broken", loop.Workflow.ID: "b"} {
			w, err := store.WorkflowGet(ctx, id)
			require.NoError(t, err)
			require.Equal(t, persistence.StatusFailed, w.Status)
			require.Equal(t, state, w.State)
			require.NotNil(t, w.Finished)
			require.Nil(t, w.NextActivation)
			require.NotNil(t, w.LastError)
			require.Contains(t, *w.LastError, "step budget")
			require.Contains(t, *w.LastError, "--max-steps")
			require.Len(t, tasksOf(t, store, id), small.Steps+1, "the budget's steps, then the attempt that failed it")
		}

		w, err := engine.Retry(ctx, workflow.RetryParams{ChangeParams: workflow.ChangeParams{ID: loop.Workflow.ID}})
		require.NoError(t, err)
		require.Equal(t, persistence.StatusInProgress, w.Status)
		runDue(t, store, engine)
		w, err = store.WorkflowGet(ctx, loop.Workflow.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusFailed, w.Status)
		require.Len(t, tasksOf(t, store, w.ID), 2*(small.Steps+1), "a retry runs a new budget")
	})
}

// A workflow that starts itself as its child stops at the depth limit: the step that would start
// a child deeper fails into its ERROR state, naming the limit, and the chain ends (each parent
// wakes when its child ends).
func TestChildDepthIsBounded(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := limitedEngine(t, store, small)
		_, err := engine.Register(ctx, workflow.Definition{Type: "t.self", States: []workflow.State{
			{Name: "spawn", Kind: workflow.Start, Next: []string{"await"}, Handler: func(sc workflow.StepContext) (workflow.Next, error) {
				sc.StartChild(workflow.ChildRequest{Type: "t.self"})
				return workflow.MoveTo("await"), nil
			}},
			{Name: "await", Kind: workflow.Wait, Next: []string{"done"}, WaitFor: &workflow.WaitFor{Children: true}},
			{Name: "done", Kind: workflow.End},
			{Name: "broken", Kind: workflow.ErrorKind},
		}})
		require.NoError(t, err)
		root, err := engine.Start(ctx, workflow.StartParams{Type: "t.self"})
		require.NoError(t, err)

		runDue(t, store, engine)

		all, _, err := store.WorkflowList(ctx, persistence.WorkflowListParams{Limit: 100})
		require.NoError(t, err)
		require.Len(t, all, small.ChildDepth+1, "the root and ChildDepth levels of children")
		failed := 0
		for _, w := range all {
			if w.Status == persistence.StatusFailed {
				failed++
				require.Contains(t, *w.LastError, "--max-child-depth")
				require.Len(t, tasksOf(t, store, w.ID), 1, "not retried")
			} else {
				require.Equal(t, persistence.StatusFinished, w.Status, "workflow %d", w.ID)
			}
		}
		require.Equal(t, 1, failed, "only the deepest fails")
		w, err := store.WorkflowGet(ctx, root.Workflow.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusFinished, w.Status)
	})
}

// A workflow that starts two copies of itself at every level (a fork bomb) stops at the tree's
// limit, not at 2^depth workflows: the step that would pass it fails without a retry.
func TestWorkflowTreesAreBounded(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		limits := workflow.Limits{ChildDepth: 5, ChildrenPerStep: 2, Children: 2, TreeWorkflows: 6}
		engine := limitedEngine(t, store, limits)
		_, err := engine.Register(ctx, workflow.Definition{Type: "t.bomb", States: []workflow.State{
			{Name: "spawn", Kind: workflow.Start, Next: []string{"await"}, Handler: func(sc workflow.StepContext) (workflow.Next, error) {
				sc.StartChild(workflow.ChildRequest{Type: "t.bomb"})
				sc.StartChild(workflow.ChildRequest{Type: "t.bomb"})
				return workflow.MoveTo("await"), nil
			}},
			{Name: "await", Kind: workflow.Wait, Next: []string{"done"}, WaitFor: &workflow.WaitFor{Children: true}},
			{Name: "done", Kind: workflow.End},
			{Name: "broken", Kind: workflow.ErrorKind},
		}})
		require.NoError(t, err)
		_, err = engine.Start(ctx, workflow.StartParams{Type: "t.bomb"})
		require.NoError(t, err)

		runDue(t, store, engine)

		all, _, err := store.WorkflowList(ctx, persistence.WorkflowListParams{Limit: 100})
		require.NoError(t, err)
		// The root, its 2 children and their 4: the next level would be 8 more (63 in all at depth 5).
		require.Len(t, all, 1+limits.TreeWorkflows)
		failed := 0
		for _, w := range all {
			if w.Status == persistence.StatusFailed {
				failed++
				require.Contains(t, *w.LastError, "--max-tree-workflows")
				require.Len(t, tasksOf(t, store, w.ID), 1, "not retried")
			}
		}
		require.Equal(t, 4, failed, "the four grandchildren could not start theirs")
	})
}

// Remote tasks keep to the same limits: a step calling a remote function with an input over the
// value limit fails without a retry, and a worker's output over it is refused (completeTask and
// completeTasks, INVALID_INPUT naming it) with the task still leased.
func TestRemoteTasksKeepToTheLimits(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := limitedEngine(t, store, small)
		big := strings.Repeat("x", 120)
		oneStep(t, engine, "t.callbig", func(sc workflow.StepContext) error {
			_, err := sc.CallRemote("f", big)
			return err
		})
		oneStep(t, engine, "t.call", func(sc workflow.StepContext) error {
			_, err := sc.CallRemote("f", "small")
			return err
		})
		callBig, err := engine.Start(ctx, workflow.StartParams{Type: "t.callbig"})
		require.NoError(t, err)
		_, err = engine.Start(ctx, workflow.StartParams{Type: "t.call"})
		require.NoError(t, err)
		runDue(t, store, engine)

		w, err := store.WorkflowGet(ctx, callBig.Workflow.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusFailed, w.Status)
		require.Contains(t, *w.LastError, "--max-value-bytes")
		require.Len(t, tasksOf(t, store, w.ID), 1)

		leased, err := engine.PollTasks(ctx, workflow.PollTasksParams{Functions: []string{"f"}})
		require.NoError(t, err)
		require.Len(t, leased, 1, "only the small call made a task")
		out := json.RawMessage(`"` + big + `"`)
		_, err = engine.CompleteTask(ctx, leased[0].Token, out, nil)
		requireCode(t, err, workflow.CodeInvalidInput, "output")
		_, err = engine.CompleteTasks(ctx, []workflow.TaskResult{{Token: leased[0].Token, Output: out}}, nil)
		requireCode(t, err, workflow.CodeInvalidInput, "results[0].output")
		task, err := engine.CompleteTask(ctx, leased[0].Token, json.RawMessage(`"fits"`), nil)
		require.NoError(t, err, "the task stayed leased")
		require.Equal(t, persistence.RemoteTaskSucceeded, task.Status)
	})
}

// A step's logs are bounded: a value over the value limit is cut, and once the step's logs pass
// the variables limit the rest are dropped with one entry saying so; the step still finishes.
// A side effect over the value limit fails the step and is not recorded.
func TestStepLogsAndSideEffectsAreBounded(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := limitedEngine(t, store, small)
		oneStep(t, engine, "t.logs", func(sc workflow.StepContext) error {
			sc.Log("big", strings.Repeat("é", 200)+"\x00")
			for i := range 10 {
				sc.Log(fmt.Sprintf("n%d", i), "0123456789")
			}
			return nil
		})
		oneStep(t, engine, "t.effect", func(sc workflow.StepContext) error {
			_, err := workflow.SideEffect(sc, "k", func() (string, error) { return strings.Repeat("x", 200), nil })
			return err
		})
		logs, err := engine.Start(ctx, workflow.StartParams{Type: "t.logs"})
		require.NoError(t, err)
		effect, err := engine.Start(ctx, workflow.StartParams{Type: "t.effect"})
		require.NoError(t, err)
		runDue(t, store, engine)

		w, err := store.WorkflowGet(ctx, logs.Workflow.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusFinished, w.Status)
		got, err := store.ActivityLogList(ctx, persistence.ActivityLogListParams{WorkflowIDs: []int64{w.ID}})
		require.NoError(t, err)
		total := 0
		for _, l := range got {
			require.LessOrEqual(t, len(l.Value), small.ValueBytes)
			total += len(l.Name) + len(l.Value)
		}
		require.True(t, strings.HasSuffix(got[0].Value, " [cut]"), got[0].Value)
		last := got[len(got)-1]
		require.Contains(t, last.Value, "--max-variables-bytes")
		require.Less(t, len(got), 11, "later logs were dropped")
		require.LessOrEqual(t, total, small.VariablesBytes+len(last.Name)+len(last.Value))

		w, err = store.WorkflowGet(ctx, effect.Workflow.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusFailed, w.Status)
		require.Contains(t, *w.LastError, "--max-value-bytes")
		_, err = store.SideEffectGet(ctx, w.ID, "k")
		require.ErrorIs(t, err, persistence.ErrNotFound)
	})
}

// A workflow that starts children step after step stops at the limit of children per workflow:
// the step that would pass it fails without a retry, and starts none.
func TestChildrenPerWorkflowAreBounded(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := limitedEngine(t, store, small)
		oneStep(t, engine, "t.child", func(workflow.StepContext) error { return nil })
		_, err := engine.Register(ctx, workflow.Definition{Type: "t.waves", States: []workflow.State{
			{Name: "spawn", Kind: workflow.Start, Next: []string{"done"}, Handler: func(sc workflow.StepContext) (workflow.Next, error) {
				for range 2 {
					sc.StartChild(workflow.ChildRequest{Type: "t.child"})
				}
				return workflow.RetryAfter(0), nil
			}},
			{Name: "done", Kind: workflow.End},
			{Name: "broken", Kind: workflow.ErrorKind},
		}})
		require.NoError(t, err)
		res, err := engine.Start(ctx, workflow.StartParams{Type: "t.waves"})
		require.NoError(t, err)
		runDue(t, store, engine)

		w, err := store.WorkflowGet(ctx, res.Workflow.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusFailed, w.Status)
		require.Contains(t, *w.LastError, "(--max-children)")
		children, _, err := store.WorkflowList(ctx, persistence.WorkflowListParams{Filter: persistence.WorkflowFilter{ParentID: &w.ID}, Limit: 10})
		require.NoError(t, err)
		require.Len(t, children, 2, "the first wave only")
		require.Len(t, tasksOf(t, store, w.ID), 2, "one wave, then the step that failed")
	})
}
