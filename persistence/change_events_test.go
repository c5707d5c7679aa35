package persistence_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

func TestChangeEventsInCursorOrder(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		head, err := store.ChangeEventHead(ctx)
		require.NoError(t, err)
		require.Equal(t, persistence.EventCursor{}, head)
		w := newWorkflow("t", persistence.StatusCreated, nil)
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{w}))

		// Many writers at once: a reader following the cursor sees every event exactly once.
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 10 {
					require.NoError(t, store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
						return tx.ChangeEventInsertMany(ctx, []*persistence.ChangeEvent{{WorkflowID: w.ID, Type: "UPDATED", Status: persistence.StatusCreated, State: "s"}})
					}))
				}
			}()
		}
		seen := map[int64]bool{}
		var cursor persistence.EventCursor
		read := func() {
			events, err := store.ChangeEventList(ctx, persistence.ChangeEventListParams{After: cursor, Limit: 7})
			require.NoError(t, err)
			for _, e := range events {
				require.False(t, seen[e.ID], "event %d read twice", e.ID)
				seen[e.ID] = true
				cursor = persistence.EventCursor{TxID: e.TxID, ID: e.ID}
			}
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
	loop:
		for {
			select {
			case <-done:
				break loop
			default:
				read()
			}
		}
		// Events of committed transactions become readable once every older transaction of this
		// schema has ended.
		for deadline := time.Now().Add(60 * time.Second); len(seen) < 80 && time.Now().Before(deadline); {
			read()
			time.Sleep(5 * time.Millisecond)
		}
		require.Len(t, seen, 80)
		head, err = store.ChangeEventHead(ctx)
		require.NoError(t, err)
		require.Equal(t, cursor, head)
		filtered, err := store.ChangeEventList(ctx, persistence.ChangeEventListParams{WorkflowIDs: []int64{w.ID + 1}})
		require.NoError(t, err)
		require.Empty(t, filtered)
	})
}

// A transaction that writes an event first but commits last must not be skipped by a reader that
// already read the event of one that committed in between (an ID handed out earlier, committed
// later).
func TestChangeEventCommittedLateIsNotSkipped(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		if store.Capabilities().SingleWriter {
			t.Skip("SQLite commits one writer at a time: no transaction commits while another is open")
		}
		ctx := context.Background()
		w := newWorkflow("t", persistence.StatusCreated, nil)
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{w}))
		event := func(typ string) []*persistence.ChangeEvent {
			return []*persistence.ChangeEvent{{WorkflowID: w.ID, Type: typ, Status: persistence.StatusCreated, State: "s"}}
		}
		inserted, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		go func() {
			done <- store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
				if err := tx.ChangeEventInsertMany(ctx, event("FIRST")); err != nil {
					return err
				}
				// Make sure the transaction has begun writing before the other one commits.
				if err := tx.WorkflowLock(ctx, []int64{w.ID}); err != nil {
					return err
				}
				close(inserted)
				<-release
				return nil
			})
		}()
		<-inserted
		require.NoError(t, store.ChangeEventInsertMany(ctx, event("SECOND")))
		var cursor persistence.EventCursor
		var seen []string
		read := func() {
			events, err := store.ChangeEventList(ctx, persistence.ChangeEventListParams{After: cursor})
			require.NoError(t, err)
			for _, e := range events {
				seen = append(seen, e.Type)
				cursor = e.CursorOf()
			}
		}
		read()
		close(release)
		require.NoError(t, <-done)
		for deadline := time.Now().Add(60 * time.Second); len(seen) < 2 && time.Now().Before(deadline); {
			read()
			time.Sleep(5 * time.Millisecond)
		}
		require.ElementsMatch(t, []string{"FIRST", "SECOND"}, seen, "every event is read once, however the commits interleave")
	})
}

// Trimming looks only at the head of the stream, deletes only events older than the cutoff, and
// never more than its limit; the oldest cursor follows the head.
func TestChangeEventTrimAndOldest(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		_, ok, err := store.ChangeEventOldest(ctx)
		require.NoError(t, err)
		require.False(t, ok, "no events yet")
		old, recent := persistence.Now().Add(-48*time.Hour), persistence.Now()
		var evs []*persistence.ChangeEvent
		for i := range 10 {
			at := recent
			if i < 6 {
				at = old
			}
			evs = append(evs, &persistence.ChangeEvent{WorkflowID: int64(i + 1), Type: "CREATED", Status: persistence.StatusCreated, State: "s", At: at})
		}
		require.NoError(t, store.ChangeEventInsertMany(ctx, evs))
		cutoff := persistence.Now().Add(-24 * time.Hour)

		n, err := store.ChangeEventTrim(ctx, persistence.ChangeEventTrimParams{Before: cutoff, Limit: 4})
		require.NoError(t, err)
		require.Equal(t, 4, n, "at most the limit")
		oldest, ok, err := store.ChangeEventOldest(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, evs[4].ID, oldest.ID)
		n, err = store.ChangeEventTrim(ctx, persistence.ChangeEventTrimParams{Before: cutoff, Limit: 4})
		require.NoError(t, err)
		require.Equal(t, 2, n, "only those older than the cutoff")
		n, err = store.ChangeEventTrim(ctx, persistence.ChangeEventTrimParams{Before: cutoff})
		require.NoError(t, err)
		require.Zero(t, n)
		// Readable once no older transaction runs (PostgreSQL reads below the oldest running one).
		var left []*persistence.ChangeEvent
		require.Eventually(t, func() bool {
			left, err = store.ChangeEventList(ctx, persistence.ChangeEventListParams{Limit: 100})
			require.NoError(t, err)
			return len(left) == 4
		}, 30*time.Second, 10*time.Millisecond)
		oldest, _, err = store.ChangeEventOldest(ctx)
		require.NoError(t, err)
		require.Equal(t, evs[6].ID, oldest.ID)
		require.Equal(t, left[0].CursorOf(), oldest)
	})
}

// A transaction open in another schema (another cairn, another test, a long report) must not hold
// this schema's change events back: they are readable while it stays open.
func TestChangeEventsNotHeldBackByAnotherSchemasTransaction(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		u := dbtest.URL(t, store.Kind())
		if store.Kind() == persistence.KindPostgres {
			u += "&idle_in_transaction_session_timeout=0" // the transaction below stays open however long
		}
		other, err := persistence.Open(ctx, u, persistence.OpenOptions{MaxConns: 2})
		require.NoError(t, err)
		defer other.Close()
		_, err = other.Migrate(ctx)
		require.NoError(t, err)
		wrote, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		var released sync.Once
		releaseOther := func() { released.Do(func() { close(release) }) }
		defer releaseOther() // before other.Close, which waits for the transaction's connection
		go func() {
			done <- other.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
				if err := tx.WorkflowInsertMany(ctx, []*persistence.Workflow{newWorkflow("t", persistence.StatusCreated, nil)}); err != nil {
					return err
				}
				close(wrote)
				<-release
				return nil
			})
		}()
		<-wrote
		w := newWorkflow("t", persistence.StatusCreated, nil)
		require.NoError(t, store.WorkflowInsertMany(ctx, []*persistence.Workflow{w}))
		require.NoError(t, store.ChangeEventInsertMany(ctx, []*persistence.ChangeEvent{{WorkflowID: w.ID, Type: "UPDATED", Status: persistence.StatusCreated, State: "s"}}))
		var events []*persistence.ChangeEvent
		// Generous: other tests' transactions in this schema's database may be open for a while,
		// but the one above stays open until the end.
		for deadline := time.Now().Add(60 * time.Second); len(events) == 0 && time.Now().Before(deadline); {
			var err error
			events, err = store.ChangeEventList(ctx, persistence.ChangeEventListParams{})
			require.NoError(t, err)
			time.Sleep(10 * time.Millisecond)
		}
		require.Len(t, events, 1, "the event is readable while another schema's transaction is open")
		select {
		case err := <-done:
			t.Fatalf("the other transaction ended (%v) before the event was read", err)
		default:
		}
		head, err := store.ChangeEventHead(ctx)
		require.NoError(t, err)
		require.Equal(t, events[0].CursorOf(), head)
		releaseOther()
		require.NoError(t, <-done)
	})
}
