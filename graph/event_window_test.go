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

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// Change events are kept for a window: once the head of the stream is trimmed, resuming from a
// cursor before it is CURSOR_EXPIRED with the cursor to resume from, and resuming from that cursor
// starts at the oldest event still held. A cursor still inside the window resumes as before.
func TestExpiredEventCursor(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		engine := engine.New(store, engine.Options{Logger: log})
		_, err := engine.Register(ctx, noopFlow)
		require.NoError(t, err)
		r := newTestResolver(engine, Config{Engine: engine, Logger: log, SubscriptionBuffer: 100}.withDefaults())

		for i := range 4 {
			_, err := engine.Start(ctx, workflow.StartParams{Type: "test.noop", BusinessKey: fmt.Sprint(i)})
			require.NoError(t, err)
		}
		// Readable once no older transaction runs (PostgreSQL reads below the oldest running one).
		var events []*persistence.ChangeEvent
		require.Eventually(t, func() bool {
			events, err = store.ChangeEventList(ctx, persistence.ChangeEventListParams{Limit: 10})
			require.NoError(t, err)
			return len(events) == 4
		}, 30*time.Second, 10*time.Millisecond)
		// The first two happened long ago (older than any window), the others now.
		_, err = store.DB().NewUpdate().TableExpr("change_events").Set("at = ?", persistence.UTC(time.Now().Add(-48*time.Hour))).
			Where("id IN (?, ?)", events[0].ID, events[1].ID).Exec(ctx)
		require.NoError(t, err)
		n, err := store.ChangeEventTrim(ctx, persistence.ChangeEventTrimParams{Before: time.Now().Add(-24 * time.Hour)})
		require.NoError(t, err)
		require.Equal(t, 2, n)

		first := eventCursorOf(events[0].CursorOf())
		_, err = r.workflowEvents(ctx, nil, &first)
		var gerr *gqlerror.Error
		require.True(t, errors.As(err, &gerr), "error: %v", err)
		require.Equal(t, codeCursorExpired, gerr.Extensions["code"])
		require.Equal(t, "after", gerr.Extensions["field"])
		resume, ok := gerr.Extensions["oldestCursor"].(string)
		require.True(t, ok)

		// From the cursor it gave: the oldest event held comes first, then the rest; from a cursor
		// still held, what follows it.
		for from, want := range map[string][]*persistence.ChangeEvent{resume: events[2:], eventCursorOf(events[2].CursorOf()): events[3:]} {
			ch, err := r.workflowEvents(ctx, nil, &from)
			require.NoError(t, err)
			for _, w := range want {
				select {
				case ev := <-ch:
					require.False(t, ev.Failed())
					got, _ := ev.Cursor()
					require.Equal(t, eventCursorOf(w.CursorOf()), got)
				case <-time.After(30 * time.Second):
					t.Fatal("the events still held never came")
				}
			}
		}
		start := EventCursorStart()
		_, err = r.workflowEvents(ctx, nil, &start)
		require.NoError(t, err, "the start cursor asks for whatever is stored")
	})
}
