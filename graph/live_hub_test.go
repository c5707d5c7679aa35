package graph

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph/model"
	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// liveSetup is an engine with test.noop registered and a resolver with its own hub.
func liveSetup(t testing.TB, store *persistence.Store, buffer int) (*engine.Engine, *Resolver) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	engine := engine.New(store, engine.Options{Logger: log})
	RegisterFanOutTypes(t, engine)
	return engine, newTestResolver(engine, Config{Engine: engine, Logger: log, SubscriptionBuffer: buffer, PollInterval: 50 * time.Millisecond}.withDefaults())
}

// startConcurrently starts n workflows of each type from several goroutines, in small batches.
func startConcurrently(engine *engine.Engine, n int, types ...string) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(types)*2)
	for _, typ := range types {
		for g := 0; g < 2; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < n/2; i += 5 {
					ps := make([]workflow.StartParams, 5)
					for j := range ps {
						ps[j] = workflow.StartParams{Type: typ}
					}
					if _, err := engine.StartMany(context.Background(), ps); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// storedEvents returns the cursors of the n stored events of workflows matching f, in stream
// order. On PostgreSQL an event is readable once every older transaction of the server has ended
// (other tests' too), so it waits for all n.
func storedEvents(t *testing.T, store *persistence.Store, f persistence.WorkflowFilter, n int) []string {
	t.Helper()
	var out []string
	r := &Resolver{store: store, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	require.Eventually(t, func() bool {
		out = nil
		head, err := store.ChangeEventHead(context.Background())
		require.NoError(t, err)
		require.True(t, r.backlog(context.Background(), f, persistence.EventCursor{}, head, func(e *liveEvent) bool {
			out = append(out, e.cursorText)
			return true
		}))
		return len(out) >= n
	}, 30*time.Second, 20*time.Millisecond)
	require.Len(t, out, n)
	return out
}

// receive reads n events (or fails after a generous timeout), returning their cursors.
func receive(t *testing.T, ch <-chan *model.WorkflowEvent, n int) []string {
	t.Helper()
	var out []string
	timeout := time.After(60 * time.Second)
	for len(out) < n {
		select {
		case ev, ok := <-ch:
			require.True(t, ok, "the stream ended after %d of %d events", len(out), n)
			c, err := ev.Cursor()
			require.NoError(t, err)
			out = append(out, c)
		case <-timeout:
			t.Fatalf("got %d of %d events", len(out), n)
		}
	}
	return out
}

// hubGate holds the hub after it read a batch and before it hands it out, once per arm.
type hubGate struct {
	armed   atomic.Bool
	reached chan struct{}
	release chan struct{}
}

func holdHub(h *liveHub) *hubGate {
	g := &hubGate{reached: make(chan struct{}), release: make(chan struct{})}
	h.beforeFanOut = func() {
		if g.armed.CompareAndSwap(true, false) {
			g.reached <- struct{}{}
			<-g.release
		}
	}
	return g
}

// hold makes the hub's next read stop before its fan-out, runs commit (whose events wake the hub),
// and returns once the hub is held.
func (g *hubGate) hold(t *testing.T, commit func() error) {
	t.Helper()
	g.armed.Store(true)
	require.NoError(t, commit())
	select {
	case <-g.reached:
	case <-time.After(60 * time.Second):
		t.Fatal("the hub never read the new events")
	}
}

// A subscription that resumes joins the hub's live stream with no gap or duplicate. The two
// interleavings where one could come are forced, on every run: a subscription from the start
// registers while the hub holds a batch it read but has not handed out (the backlog ends at the
// hub's position, the held batch comes live); and a subscription resumes from a cursor ahead of
// the hub (one a client got from another node), so that events up to its cursor reach it live
// from the hub and must be skipped.
func TestResumeJoinsTheLiveStreamWithNoGapOrDuplicate(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		engine, r := liveSetup(t, store, 10000)
		gate := holdHub(r.hub)
		ctx := context.Background()
		// A live subscriber keeps the hub running.
		liveCtx, stopLive := context.WithCancel(ctx)
		defer stopLive()
		live, err := r.workflowEvents(liveCtx, nil, nil)
		require.NoError(t, err)
		require.NoError(t, startConcurrently(engine, 40, "test.noop"))
		receive(t, live, 40) // handed out: the hub's position is past them

		gate.hold(t, func() error { return startConcurrently(engine, 40, "test.noop") })
		start := EventCursorStart()
		first, err := r.workflowEvents(ctx, nil, &start)
		require.NoError(t, err)
		require.NoError(t, startConcurrently(engine, 40, "test.noop")) // committed while the hub is held
		gate.release <- struct{}{}
		want := storedEvents(t, store, persistence.WorkflowFilter{}, 120)
		require.Equal(t, want, receive(t, first, 120), "from the start: the backlog, then the held batch and the rest live")

		gate.hold(t, func() error { return startConcurrently(engine, 40, "test.noop") })
		want = storedEvents(t, store, persistence.WorkflowFilter{}, 160)
		resumeAt := want[139] // ahead of the hub, which has handed out up to want[119]
		resumeCtx, stopResume := context.WithCancel(ctx)
		defer stopResume()
		second, err := r.workflowEvents(resumeCtx, nil, &resumeAt)
		require.NoError(t, err)
		require.NoError(t, startConcurrently(engine, 20, "test.noop"))
		gate.release <- struct{}{}

		want = storedEvents(t, store, persistence.WorkflowFilter{}, 180)
		require.Equal(t, want[140:], receive(t, second, 40), "the resumed stream: every event after its cursor once, in order")
		require.Equal(t, want[120:], receive(t, first, 60), "the first stream went on with no gap or duplicate")
		for name, ch := range map[string]<-chan *model.WorkflowEvent{"first": first, "second": second} {
			select {
			case ev := <-ch:
				c, _ := ev.Cursor()
				t.Fatalf("the %s stream got an event more than was committed: %s", name, c)
			default:
			}
		}
	})
}

func TestHubFansOutToManyFilteredSubscribers(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		engine, r := liveSetup(t, store, 1000)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		const subscribers = 200
		types := []string{"test.noop", "test.other"}
		// Subscribers to one type, to each type, to both, and to every type.
		filters := [][]string{{types[0]}, {types[1]}, types, nil}
		chans := make([]<-chan *model.WorkflowEvent, subscribers)
		for i := range chans {
			var err error
			chans[i], err = r.workflowEvents(ctx, &model.WorkflowFilter{Types: filters[i%len(filters)]}, nil)
			require.NoError(t, err)
		}
		// One that leaves at once: the others of its type still get every event.
		leave, left := context.WithCancel(ctx)
		gone, err := r.workflowEvents(leave, &model.WorkflowFilter{Types: types}, nil)
		require.NoError(t, err)
		left()
		require.Empty(t, drain(t, gone))
		require.Eventually(t, func() bool {
			r.hub.mu.Lock()
			defer r.hub.mu.Unlock()
			return len(r.hub.subs) == subscribers
		}, 10*time.Second, 10*time.Millisecond)
		require.NoError(t, startConcurrently(engine, 40, types...))
		for i, f := range filters {
			n := 40 * len(f)
			if f == nil {
				n = 80
			}
			want := storedEvents(t, store, persistence.WorkflowFilter{Types: f}, n)
			for j := i; j < subscribers; j += len(filters) {
				require.Equal(t, want, receive(t, chans[j], n), "subscriber %d (%v)", j, f)
			}
		}
		for _, ch := range chans {
			select {
			case ev := <-ch:
				t.Fatalf("an event more than was committed: %v", ev)
			default:
			}
		}
		cancel()
		for _, ch := range chans {
			require.Empty(t, drain(t, ch), "each stream ends with its request")
		}
		require.Eventually(t, func() bool {
			r.hub.mu.Lock()
			defer r.hub.mu.Unlock()
			return !r.hub.running && len(r.hub.subs) == 0
		}, 10*time.Second, 10*time.Millisecond, "the hub stops with its last subscription")
	})
}

func TestWorkflowUpdatedCompletesWhenTheWorkflowEnds(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		engine, r := liveSetup(t, store, 16)
		ctx := context.Background()
		res, err := engine.Start(ctx, workflow.StartParams{Type: "test.noop"})
		require.NoError(t, err)
		ch, err := r.workflowUpdated(ctx, encodeID(kindWorkflow, res.Workflow.ID))
		require.NoError(t, err)
		first := <-ch
		require.Equal(t, persistence.StatusCreated, first.Status)
		_, err = engine.Cancel(ctx, workflow.ChangeParams{ID: res.Workflow.ID, Reason: "test"})
		require.NoError(t, err)
		var last *persistence.Workflow
		timeout := time.After(30 * time.Second)
		for closed := false; !closed; {
			select {
			case w, ok := <-ch:
				if !ok {
					closed = true
					break
				}
				last = w
			case <-timeout:
				t.Fatal("workflowUpdated did not complete when its workflow ended")
			}
		}
		require.NotNil(t, last)
		require.Equal(t, persistence.StatusCancelled, last.Status)

		// A workflow that has already ended: its state once, then the end.
		ch, err = r.workflowUpdated(ctx, encodeID(kindWorkflow, res.Workflow.ID))
		require.NoError(t, err)
		require.Equal(t, persistence.StatusCancelled, (<-ch).Status)
		_, ok := <-ch
		require.False(t, ok)
	})
}

// TestIdleSubscriptionMemory measures what 1,000 idle workflowEvents subscriptions hold (their
// goroutine, two buffers and the hub's entry), for the README; it asserts only that they all end.
func TestIdleSubscriptionMemory(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		_, r := liveSetup(t, store, 256)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		const n = 1000
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		chans := make([]<-chan *model.WorkflowEvent, n)
		for i := range chans {
			var err error
			chans[i], err = r.workflowEvents(ctx, &model.WorkflowFilter{Types: []string{fmt.Sprint("t", i)}}, nil)
			require.NoError(t, err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perSub := (int64(after.HeapAlloc+after.StackInuse) - int64(before.HeapAlloc+before.StackInuse)) / n
		t.Logf("%d idle subscriptions: about %d bytes each (heap and stacks; buffer 256)", n, perSub)
		cancel()
		for _, ch := range chans {
			require.Empty(t, drain(t, ch))
		}
	})
}

// The hub judges an event only against the subscriptions of its workflow, of its type and those
// with neither in their filter: a thousand subscriptions to another type cost it nothing. Before,
// it judged every event against every subscription.
func TestHubJudgesAnEventOnlyAgainstItsOwnSubscriptions(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		engine, r := liveSetup(t, store, 256)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for range 1000 {
			_, err := r.workflowEvents(ctx, &model.WorkflowFilter{Types: []string{"test.noop"}}, nil)
			require.NoError(t, err)
		}
		watched, err := r.workflowEvents(ctx, &model.WorkflowFilter{Types: []string{"test.other"}}, nil)
		require.NoError(t, err)
		var first int64
		for i := range 20 {
			w, err := engine.Start(ctx, workflow.StartParams{Type: "test.other"})
			require.NoError(t, err)
			if i == 0 {
				first = w.Workflow.ID
			}
		}
		receive(t, watched, 20)
		byID, err := r.workflowEvents(ctx, &model.WorkflowFilter{Ids: []string{encodeID(kindWorkflow, first)}}, nil)
		require.NoError(t, err)
		// One event of a watched workflow more, for the subscription by ID.
		_, err = engine.Cancel(ctx, workflow.ChangeParams{ID: first, Reason: "test"})
		require.NoError(t, err)
		receive(t, byID, 1)
		receive(t, watched, 1)
		// 21 events, each judged against the one subscription to its type, and the last also
		// against the one to its workflow.
		require.EqualValues(t, 22, r.hub.judged.Load())
	})
}

// The hub reads the database at most once per hubReadGap however often commits wake it. Before,
// it read after every commit: on a busy node, twice as many statements as the starts made.
func TestHubReadsAtMostOncePerGap(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		engine, r := liveSetup(t, store, 1000)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ch, err := r.workflowEvents(ctx, &model.WorkflowFilter{Types: []string{"test.other"}}, nil)
		require.NoError(t, err)
		began := time.Now()
		rounds := r.hub.rounds.Load()
		for range 300 {
			_, err := engine.Start(ctx, workflow.StartParams{Type: "test.other"})
			require.NoError(t, err)
		}
		receive(t, ch, 300)
		elapsed := time.Since(began)
		read := r.hub.rounds.Load() - rounds
		require.LessOrEqual(t, read, int64(elapsed/hubReadGap)+2, "%d reads in %s", read, elapsed)
	})
}
