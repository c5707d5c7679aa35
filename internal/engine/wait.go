package engine

import (
	"context"
	"errors"
	"iter"
	"time"

	"github.com/cairnflow/cairn/persistence"
)

// followPoll is how often Wait and Follow look at the database without a hint: a change committed
// on another node comes with a hint only when the nodes share a PostgreSQL and run their Notifiers.
const followPoll = time.Second

// followBatch is how many change events Follow reads at once.
const followBatch = 100

// Wait blocks until the workflow with this ID has ended (FINISHED, FAILED or CANCELLED) and returns
// it as it ended, at once when it has ended already. It returns ctx's error when ctx ends first, and
// a NOT_FOUND error when there is no such workflow.
//
// Wait does not poll in a loop: it reads the workflow again when the engine's notifier says change
// events were committed (by this node, or by another one whose hints reach this Notifier), and
// otherwise once a second. It starts no goroutine.
func (e *Engine) Wait(ctx context.Context, id int64) (*persistence.Workflow, error) {
	hints, unsubscribe := e.notifier.Subscribe(persistence.TopicEvents)
	defer unsubscribe()
	poll := time.NewTicker(followPoll)
	defer poll.Stop()
	for {
		w, err := e.store.WorkflowGet(ctx, id)
		switch {
		case errors.Is(err, persistence.ErrNotFound):
			return nil, notFound("id", "no workflow %v", workflowRef(id))
		case err != nil && ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			e.log.Warn("error reading a workflow for Wait; trying again", "workflow", id, "error", err)
		case w.Status.Terminal():
			return w, nil
		}
		if err := waitForHint(ctx, hints, poll.C); err != nil {
			return nil, err
		}
	}
}

// Follow returns the change events of the workflow with this ID from the head of the change-event
// stream when Follow is called, in commit order (on PostgreSQL the stream is readable up to the
// oldest transaction still running, so the first may have committed just before the call): one for each step written, signal, operation (pause, cancel, ...), recovery and
// wake-up, with the status and state it left the workflow in. The sequence ends after the event
// that ends the workflow (a terminal status), and is empty when the workflow had ended before
// Follow was called; when ctx ends first it ends with ctx's error. A workflow that does not exist
// gives one NOT_FOUND error. Breaking out of the loop stops following.
//
//	for ev, err := range engine.Follow(ctx, id) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(ev.Type, ev.Status, ev.State)
//	}
//
// Like Wait, Follow reads the database when the engine's notifier hints at new events and
// otherwise once a second, in the caller's goroutine (it starts none). Each loop over the sequence
// starts again from where Follow was called.
func (e *Engine) Follow(ctx context.Context, id int64) iter.Seq2[*persistence.ChangeEvent, error] {
	// The position is taken now, so that no change committed after Follow returns is missed, however
	// late the loop over the sequence begins.
	start, err := e.store.ChangeEventHead(ctx)
	var ended bool
	if err == nil {
		var w *persistence.Workflow
		if w, err = e.store.WorkflowGet(ctx, id); errors.Is(err, persistence.ErrNotFound) {
			err = notFound("id", "no workflow %v", workflowRef(id))
		} else if err == nil {
			ended = w.Status.Terminal()
		}
	}
	return func(yield func(*persistence.ChangeEvent, error) bool) {
		if err != nil {
			yield(nil, err)
			return
		}
		if ended {
			return
		}
		hints, unsubscribe := e.notifier.Subscribe(persistence.TopicEvents)
		defer unsubscribe()
		poll := time.NewTicker(followPoll)
		defer poll.Stop()
		pos := start
		for {
			events, more, next, err := e.followRead(ctx, id, pos)
			if err != nil && ctx.Err() == nil {
				e.log.Warn("error reading change events for Follow; trying again", "workflow", id, "error", err)
			}
			pos = next
			for _, ev := range events {
				if !yield(ev, nil) || ev.Status.Terminal() {
					return
				}
			}
			if more {
				continue
			}
			if err := waitForHint(ctx, hints, poll.C); err != nil {
				yield(nil, err)
				return
			}
		}
	}
}

// followRead reads a workflow's events after pos, and returns them with whether more may follow
// at once and the position to read from next. The position moves past the events of other
// workflows too (up to the head read first), so that a read never scans the stream again from the
// workflow's last event.
func (e *Engine) followRead(ctx context.Context, id int64, pos persistence.EventCursor) ([]*persistence.ChangeEvent, bool, persistence.EventCursor, error) {
	head, err := e.store.ChangeEventHead(ctx)
	if err != nil {
		return nil, false, pos, err
	}
	events, err := e.store.ChangeEventList(ctx, persistence.ChangeEventListParams{After: pos, Limit: followBatch, WorkflowIDs: []int64{id}})
	if err != nil {
		return nil, false, pos, err
	}
	if len(events) == followBatch {
		return events, true, events[len(events)-1].CursorOf(), nil
	}
	// Every event of the workflow up to head was read (head was readable before the list ran).
	next := pos
	if head.After(next) {
		next = head
	}
	if len(events) > 0 && events[len(events)-1].CursorOf().After(next) {
		next = events[len(events)-1].CursorOf()
	}
	return events, false, next, nil
}

// waitForHint waits for a change-event hint (taking every hint already queued: one read answers
// them all) or the poll, and returns ctx's error when ctx ends first.
func waitForHint(ctx context.Context, hints <-chan string, poll <-chan time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-hints:
	case <-poll:
	}
	for {
		select {
		case <-hints:
		default:
			return nil
		}
	}
}
