package graph

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cairnflow/cairn/graph/model"
	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

var noopFlow = workflow.Definition{Type: "test.noop", States: []workflow.State{
	{Name: "start", Kind: workflow.Start, Next: []string{"done"}, Handler: func(workflow.StepContext) (workflow.Next, error) { return workflow.Finish(), nil }},
	{Name: "done", Kind: workflow.End},
}}

// drain reads a subscription channel until it closes (bounded by a generous timeout).
func drain(t *testing.T, ch <-chan *model.WorkflowEvent) []*model.WorkflowEvent {
	t.Helper()
	var out []*model.WorkflowEvent
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return out
			}
			out = append(out, ev)
		case <-timeout:
			t.Fatal("the subscription never ended")
		}
	}
}

// newTestResolver returns a Resolver with its own change-event hub, as NewExecutor builds it.
func newTestResolver(engine *engine.Engine, cfg Config) *Resolver {
	return &Resolver{engine: engine, store: engine.Store(), log: cfg.Logger, cfg: cfg,
		hub: newLiveHub(engine.Store(), engine.Notifier(), cfg.Logger, cfg.PollInterval, cfg.SubscriptionBuffer)}
}

func TestSlowSubscriberIsCutOffAndResumesByCursor(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		engine := engine.New(store, engine.Options{Logger: log})
		_, err := engine.Register(context.Background(), noopFlow)
		require.NoError(t, err)
		cfg := Config{Engine: engine, Logger: log, SubscriptionBuffer: 3, PollInterval: 20 * time.Millisecond}.withDefaults()
		r := newTestResolver(engine, cfg)

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		start := EventCursorStart()
		ch, err := r.workflowEvents(ctx, nil, &start)
		require.NoError(t, err)
		// A first workflow's event, once read, shows the subscription follows the hub live (past
		// its empty backlog). Before that, events the hub drops for it would be read again from
		// the database at the subscriber's pace, and it would never be cut off.
		warm, err := engine.Start(ctx, workflow.StartParams{Type: "test.noop", BusinessKey: "warm-up"})
		require.NoError(t, err)
		select {
		case ev := <-ch:
			id, _ := ev.WorkflowID()
			require.Equal(t, encodeID(kindWorkflow, warm.Workflow.ID), id)
		case <-time.After(30 * time.Second):
			t.Fatal("the first workflow's event never came")
		}

		// Ten workflows start while the subscriber reads nothing: the engine is never held up.
		ps := make([]workflow.StartParams, 10)
		for i := range ps {
			ps[i] = workflow.StartParams{Type: "test.noop", BusinessKey: fmt.Sprint(i)}
		}
		started, err := engine.StartMany(ctx, ps)
		require.NoError(t, err)

		// The subscriber wakes up only once its buffer and the error fill the channel.
		require.Eventually(t, func() bool { return len(ch) == cap(ch) }, 30*time.Second, 10*time.Millisecond)
		got := drain(t, ch)
		require.Len(t, got, 4, "the buffer, then the error")
		last := got[3]
		require.True(t, last.Failed())
		_, ferr := last.Cursor()
		var gerr *gqlerror.Error
		require.True(t, errors.As(ferr, &gerr))
		require.Equal(t, codeSlowSubscriber, gerr.Extensions["code"])
		resume := gerr.Extensions["cursor"].(string)
		c2, _ := got[2].Cursor()
		require.Equal(t, c2, resume, "it resumes after the last event it was given")

		// Resuming gets the seven it missed, in order; then cancelling the request ends the stream.
		ctx2, cancel2 := context.WithCancel(context.Background())
		// (A node with a larger buffer: the seven arrive in one read, faster than any reader.)
		r2 := newTestResolver(engine, Config{Engine: engine, Logger: log, SubscriptionBuffer: 100}.withDefaults())
		ch, err = r2.workflowEvents(ctx2, nil, &resume)
		require.NoError(t, err)
		var ids []string
		for _, ev := range got[:3] {
			id, _ := ev.WorkflowID()
			ids = append(ids, id)
		}
		for len(ids) < 10 {
			select {
			case ev := <-ch:
				require.False(t, ev.Failed())
				id, _ := ev.WorkflowID()
				ids = append(ids, id)
			case <-time.After(30 * time.Second):
				t.Fatal("missed events never came")
			}
		}
		for i, res := range started {
			require.Equal(t, encodeID(kindWorkflow, res.Workflow.ID), ids[i], "every event once, in order")
		}
		cancel2()
		require.Empty(t, drain(t, ch), "the goroutine ends with the request")
	})
}

func TestErrorPresenterMasksInternalErrors(t *testing.T) {
	t.Parallel()
	present := errorPresenter(slog.New(slog.NewTextHandler(io.Discard, nil)), 90*time.Second)
	ctx := context.Background()
	e := present(ctx, fmt.Errorf("error loading: %w", errors.New(`ERROR: relation "workflows" does not exist (SQLSTATE 42P01)`)))
	require.Equal(t, "internal error", e.Message)
	require.Equal(t, "INTERNAL", e.Extensions["code"])
	e = present(ctx, recoverFunc(slog.New(slog.NewTextHandler(io.Discard, nil)))(ctx, "boom"))
	require.Equal(t, "internal error", e.Message)
	require.Equal(t, "INTERNAL", e.Extensions["code"])
	e = present(ctx, fmt.Errorf("x: %w", persistence.ErrNotFound))
	require.Equal(t, "NOT_FOUND", e.Extensions["code"])
	e = present(ctx, invalidInput("state", "bad"))
	require.Equal(t, "INVALID_INPUT", e.Extensions["code"])
	require.Equal(t, "state", e.Extensions["field"])
}
