package pool_test

import (
	"context"
	"encoding/json"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// keyTracker records, per concurrency key, the workflows between their first step's start and
// their last step's end, and the most there ever were at once. It counts workflows, not attempts:
// an attempt run again (its node looked dead on a loaded machine) is the same workflow.
type keyTracker struct {
	mu      sync.Mutex
	running map[string]map[int64]bool
	most    map[string]int
}

func newKeyTracker() *keyTracker {
	return &keyTracker{running: map[string]map[int64]bool{}, most: map[string]int{}}
}

func (k *keyTracker) enter(key string, id int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.running[key] == nil {
		k.running[key] = map[int64]bool{}
	}
	k.running[key][id] = true
	k.most[key] = max(k.most[key], len(k.running[key]))
}

func (k *keyTracker) leave(key string, id int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.running[key], id)
}

// keyOf reads the test's key from a step's input ("" without one).
func keyOf(ctx workflow.StepContext) string {
	var in struct {
		Customer string `json:"customer"`
	}
	_ = ctx.Input(&in)
	return in.Customer
}

// twoSteps is a definition of two steps in a row whose workflows k tracks from the start of the
// first to the end of the second, under fc.
func twoSteps(typ string, k *keyTracker, fc *workflow.FlowControl) workflow.Definition {
	return workflow.Definition{Type: typ, FlowControl: fc, States: []workflow.State{
		{Name: "first", Kind: workflow.Start, Next: []string{"second"}, Handler: func(ctx workflow.StepContext) (workflow.Next, error) {
			k.enter(keyOf(ctx), ctx.WorkflowID())
			time.Sleep(5 * time.Millisecond) // gives other claims a chance to overlap it
			return workflow.MoveTo("second"), nil
		}},
		{Name: "second", Kind: workflow.Normal, Next: []string{"done"}, Handler: func(ctx workflow.StepContext) (workflow.Next, error) {
			time.Sleep(5 * time.Millisecond)
			k.leave(keyOf(ctx), ctx.WorkflowID())
			return workflow.MoveTo("done"), nil
		}},
		{Name: "done", Kind: workflow.End}}}
}

// A WORKFLOW concurrency limit of 1 per key, the key computed from the input by the definition's
// jq expression or given by the start: no two workflows of a key ever run at once, on two pools
// claiming together, keyless workflows share one slot, and every workflow finishes.
func TestFlowConcurrencyPerKeyHoldsAcrossPools(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		k := newKeyTracker()
		fc := &workflow.FlowControl{Concurrency: &workflow.Concurrency{Limit: 1, Key: ".customer"}}
		b := setup(t, store, twoSteps("t.flow", k, fc))
		b.startWorker(t, steadyOptions())
		b.startWorker(t, steadyOptions())
		var ids []int64
		for i := range 24 {
			p := workflow.StartParams{Type: "t.flow", Input: json.RawMessage(`{"customer":"` + []string{"c1", "c2", "c3"}[i%3] + `"}`)}
			if i%4 == 3 {
				p.Input = json.RawMessage(`{}`)
				p.ConcurrencyKey = ""
			}
			res, err := b.engine.Start(ctx, p)
			require.NoError(t, err)
			ids = append(ids, res.Workflow.ID)
		}
		for _, id := range ids {
			w := b.waitStatus(t, id, persistence.StatusFinished)
			_ = w
		}
		k.mu.Lock()
		defer k.mu.Unlock()
		for key, n := range k.most {
			require.Equalf(t, 1, n, "%d workflows of key %q ran at once", n, key)
		}
	})
}

// A key given by the start wins over the expression; an expression that fails for one input puts
// that workflow alone in MANUAL with the reason, and the others run; a rate limit's key
// expression likewise.
func TestFlowKeyExpressionFailurePutsOneWorkflowInManual(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		k := newKeyTracker()
		fc := &workflow.FlowControl{Concurrency: &workflow.Concurrency{Limit: 2, Key: ".customer | ascii_downcase"}}
		rated := &workflow.FlowControl{RateLimit: &workflow.RateLimit{Limit: 100, Period: time.Second, Key: ".partner | ascii_downcase"}}
		b := setup(t, store, twoSteps("t.flowkey", k, fc), twoSteps("t.ratekey", k, rated))
		b.startWorker(t, steadyOptions())
		bad, err := b.engine.Start(ctx, workflow.StartParams{Type: "t.flowkey", Input: json.RawMessage(`{"customer": 7}`)})
		require.NoError(t, err)
		require.Equal(t, persistence.StatusManual, bad.Workflow.Status)
		require.Contains(t, deref(bad.Workflow.StateText), "concurrency key")
		good, err := b.engine.Start(ctx, workflow.StartParams{Type: "t.flowkey", Input: json.RawMessage(`{"customer": "ACME"}`)})
		require.NoError(t, err)
		require.Equal(t, "acme", deref(good.Workflow.ConcurrencyKey))
		explicit, err := b.engine.Start(ctx, workflow.StartParams{Type: "t.flowkey", Input: json.RawMessage(`{"customer": 7}`), ConcurrencyKey: "mine"})
		require.NoError(t, err)
		require.Equal(t, "mine", deref(explicit.Workflow.ConcurrencyKey))
		b.waitStatus(t, good.Workflow.ID, persistence.StatusFinished)
		b.waitStatus(t, explicit.Workflow.ID, persistence.StatusFinished)
		stored, err := store.WorkflowGet(ctx, bad.Workflow.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusManual, stored.Status)

		// A rate limit's key expression follows the same rule: MANUAL with the reason, the others run.
		badRate, err := b.engine.Start(ctx, workflow.StartParams{Type: "t.ratekey", Input: json.RawMessage(`{"partner": 7}`)})
		require.NoError(t, err)
		require.Equal(t, persistence.StatusManual, badRate.Workflow.Status)
		require.Contains(t, deref(badRate.Workflow.StateText), "rate limit key")
		goodRate, err := b.engine.Start(ctx, workflow.StartParams{Type: "t.ratekey", Input: json.RawMessage(`{"partner": "P"}`)})
		require.NoError(t, err)
		b.waitStatus(t, goodRate.Workflow.ID, persistence.StatusFinished)
	})
}

// CANCEL_NEWEST cancels a start whose key is full, with the reason; CANCEL_IN_PROGRESS cancels the
// holder for the newcomer, which then runs.
func TestFlowCancelStrategies(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		slow := newSlowStep()
		def := slow.definition()
		def.FlowControl = &workflow.FlowControl{Concurrency: &workflow.Concurrency{Limit: 1, Strategy: workflow.StrategyCancelNewest}}
		newest := def
		newest.Type = "t.newest"
		inProgress := slow.definition()
		inProgress.Type = "t.inprogress"
		inProgress.FlowControl = &workflow.FlowControl{Concurrency: &workflow.Concurrency{Limit: 1, Strategy: workflow.StrategyCancelInProgress}}
		b := setup(t, store, newest, inProgress)
		b.startWorker(t, steadyOptions())
		t.Cleanup(func() { close(slow.done) })

		first := b.start(t, "t.newest", `{}`)
		slow.next(t)
		second := b.start(t, "t.newest", `{}`)
		b.waitStatus(t, second.ID, persistence.StatusCancelled)
		as := b.actions(t, second.ID)
		require.Contains(t, deref(as[len(as)-1].StateText), "concurrency", "the cancel says why")
		held, err := store.WorkflowGet(ctx, first.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.StatusExecuting, held.Status)
		slow.release <- struct{}{}
		b.waitStatus(t, first.ID, persistence.StatusFinished)

		old := b.start(t, "t.inprogress", `{}`)
		slow.next(t)
		newer := b.start(t, "t.inprogress", `{}`)
		b.waitStatus(t, old.ID, persistence.StatusCancelled)
		// The cancelled attempt ends and the newcomer runs: every attempt is let go until it has
		// finished (on a loaded machine an attempt may run again after its node looked dead).
		deadline := time.Now().Add(90 * time.Second)
		for {
			w, err := store.WorkflowGet(ctx, newer.ID)
			require.NoError(t, err)
			if w.Status == persistence.StatusFinished {
				break
			}
			require.True(t, time.Now().Before(deadline), "the newcomer never finished: %s", w.Status)
			select {
			case slow.release <- struct{}{}:
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
}

// A rate limit of 5 steps a second per type spaces its step starts by 200 ms (GCRA, burst 1): 8
// steps cannot all have started sooner than 7 intervals after the first workflow was created,
// whichever of two pools claims them, and every workflow finishes. (A lower bound: load only makes
// the steps later.)
func TestFlowRateLimitSpacesSteps(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		k := newKeyTracker()
		def := twoSteps("t.rate", k, &workflow.FlowControl{RateLimit: &workflow.RateLimit{Limit: 5, Period: time.Second}})
		b := setup(t, store, def)
		b.startWorker(t, steadyOptions())
		b.startWorker(t, steadyOptions())
		var ws []*persistence.Workflow
		for range 4 {
			ws = append(ws, b.start(t, "t.rate", `{}`))
		}
		var starts []time.Time
		for _, w := range ws {
			b.waitStatus(t, w.ID, persistence.StatusFinished)
			for _, task := range b.tasks(t, w.ID) {
				if task.Status != persistence.TaskSucceeded {
					t.Logf("workflow %d: attempt of %s %s: %v", w.ID, task.State, task.Status, deref(task.Error))
				}
				starts = append(starts, task.Started)
			}
		}
		require.GreaterOrEqual(t, len(starts), 8) // an attempt run again is one more claim
		sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
		require.GreaterOrEqual(t, starts[7].Sub(ws[0].Created), 7*200*time.Millisecond,
			"8 rate-limited steps started within less than 7 intervals: %v", starts)
	})
}

// A workflow held back by a rate limit is claimed when its slot comes, whatever else the pool
// claimed meanwhile: with no poll to fall back on, 30 workflows under a limit of 20 a second all
// finish. A claim that served only freed keys (a completion's) forgot when the throttled workflows
// could run, and they waited for the poll (on every backend).
func TestFlowRateLimitedWorkflowsRunWithoutThePoll(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		k := newKeyTracker()
		def := twoSteps("t.ratepoll", k, &workflow.FlowControl{RateLimit: &workflow.RateLimit{Limit: 20, Period: time.Second}})
		b := setup(t, store, def)
		opts := steadyOptions()
		opts.PollInterval = time.Hour
		b.startWorker(t, opts)
		var ws []*persistence.Workflow
		for range 30 {
			ws = append(ws, b.start(t, "t.ratepoll", `{}`))
		}
		for _, w := range ws {
			b.waitStatus(t, w.ID, persistence.StatusFinished)
		}
	})
}
