package graph

import (
	"context"

	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cairnflow/cairn/graph/internal/request"
	"github.com/cairnflow/cairn/graph/model"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// eventBatch is how many change events a subscription reads per statement.
const eventBatch = 500

// eventCursor is the content of a WorkflowEvent cursor.
type eventCursor struct {
	Kind string `json:"k"`
	TxID int64  `json:"x"`
	ID   int64  `json:"i"`
}

func eventCursorOf(c persistence.EventCursor) string {
	return encodeCursor(eventCursor{Kind: "e", TxID: c.TxID, ID: c.ID})
}

// EventCursorStart returns the cursor before every change event: workflowEvents with after set to
// it replays the whole stream that is still stored.
func EventCursorStart() string { return eventCursorOf(persistence.EventCursor{}) }

func parseEventCursor(s string) (persistence.EventCursor, error) {
	var c eventCursor
	if err := decodeCursor("after", s, &c); err != nil {
		return persistence.EventCursor{}, err
	}
	if c.Kind != "e" || c.ID < 0 || c.TxID < 0 {
		return persistence.EventCursor{}, invalidInput("after", "not a cursor of workflow events")
	}
	return persistence.EventCursor{TxID: c.TxID, ID: c.ID}, nil
}

// checkCursorHeld refuses a cursor from before the oldest change event still stored (events are
// kept for a window, see serve --event-retention): events after it may be gone. The error carries
// the cursor to resume from instead, just before the oldest event held. The start cursor always
// passes: it asks for whatever is stored.
func (r *Resolver) checkCursorHeld(ctx context.Context, c persistence.EventCursor) error {
	if c == (persistence.EventCursor{}) {
		return nil
	}
	oldest, ok, err := r.store.ChangeEventOldest(ctx)
	if err != nil || !ok {
		return err
	}
	if resume := oldest.Before(); resume.After(c) {
		return &gqlerror.Error{
			Message:    "events after this cursor are no longer kept; resume from extensions.oldestCursor (the oldest event held comes next)",
			Extensions: map[string]any{"code": codeCursorExpired, "field": "after", "oldestCursor": eventCursorOf(resume)},
		}
	}
	return nil
}

// backlog reads the stored events matching f in (from, to] and hands each to send, in stream
// order, at the pace send takes them. It returns false when send does, or when ctx ends.
func (r *Resolver) backlog(ctx context.Context, f persistence.WorkflowFilter, from, to persistence.EventCursor, send func(*liveEvent) bool) bool {
	sub := liveSub{filter: f}
	for to.After(from) {
		events, err := r.store.ChangeEventList(ctx, persistence.ChangeEventListParams{After: from, Limit: eventBatch, WorkflowIDs: f.IDs})
		if err != nil {
			if ctx.Err() == nil {
				r.log.WarnContext(ctx, "error reading change events for a subscription", "error", err)
			}
			return false
		}
		if len(events) == 0 {
			return true // the rest was purged
		}
		byID, err := workflowsOf(ctx, r.store, events)
		if err == nil && len(f.Attributes) > 0 {
			err = loadAttributes(ctx, r.store, byID)
		}
		if err != nil {
			if ctx.Err() == nil {
				r.log.WarnContext(ctx, "error loading workflows for a subscription", "error", err)
			}
			return false
		}
		for _, ev := range events {
			if ev.CursorOf().After(to) {
				return true
			}
			e := newLiveEvent(ev, byID[ev.WorkflowID])
			if sub.matches(e) && !send(e) {
				return false
			}
			from = e.cursor
		}
	}
	return true
}

// workflowEvents streams the change events matching a filter: with after, first those stored
// since that cursor (read from the database at the subscriber's pace), then, with no gap and no
// duplicate, those the node's hub reads as they are committed. A live subscriber may lag at most
// SubscriptionBuffer events behind: then the stream ends with a SLOW_SUBSCRIBER error carrying the
// cursor of the last event it was given, so that it resumes there and misses nothing. The engine
// never waits for a subscriber.
func (r *Resolver) workflowEvents(ctx context.Context, filter *model.WorkflowFilter, after *string) (<-chan *model.WorkflowEvent, error) {
	if filter != nil && filter.Stuck != nil {
		return nil, workflow.NewError(workflow.CodeInvalidInput, "filter.stuck", "workflowEvents cannot filter by stuck: a workflow becomes stuck with no event")
	}
	f, err := r.filterOf(ctx, filter)
	if err != nil {
		return nil, err
	}
	// An EventSource that reconnects sends the id of the last event it got: resume after it.
	if last, ok := request.LastEventID(ctx); ok {
		after = &last
	}
	var cursor persistence.EventCursor
	if after != nil {
		if cursor, err = parseEventCursor(*after); err != nil {
			return nil, err
		}
		if err := r.checkCursorHeld(ctx, cursor); err != nil {
			return nil, err
		}
	}
	release, err := r.subs.acquire(ctx)
	if err != nil {
		return nil, err
	}
	// Register before reading anything: every event after the hub's position reaches the
	// subscription live, and the backlog is read up to that position.
	sub, pos, err := r.hub.register(ctx, f)
	if err != nil {
		release()
		return nil, err
	}
	if after == nil {
		cursor = pos
	}
	size := r.cfg.SubscriptionBuffer
	out := make(chan *model.WorkflowEvent, size+1) // the spare slot is for the error
	ids := request.EventIDsOf(ctx)                 // an SSE stream's event ids (nil otherwise)
	go func() {
		defer release()
		defer close(out)
		defer func() { r.hub.unregister(sub) }()
		sent := cursor // every matching event up to here was given to the subscriber
		for {
			// The backlog, sent as fast as the subscriber reads it.
			if !r.backlog(ctx, f, sent, pos, func(e *liveEvent) bool {
				ids.Note(e.cursorText)
				select {
				case out <- e.model:
					sent = e.cursor
					return true
				case <-ctx.Done():
					return false
				}
			}) {
				return
			}
			if pos.After(sent) {
				sent = pos
			}
			// From here the hub sends the events itself, as it reads them.
			live, ended := r.hub.goLive(sub, &liveSink{out: out, size: size, sent: sent, ids: ids})
			if ended {
				return
			}
			if live {
				break
			}
			// The hub dropped the subscription while it read its backlog: read on from the
			// database up to the hub's new position.
			if sub, pos, err = r.hub.register(ctx, f); err != nil {
				if ctx.Err() == nil {
					r.log.WarnContext(ctx, "error following change events", "error", err)
				}
				return
			}
		}
		// The hub closes ch when the subscriber fell behind (it sent the error).
		select {
		case <-ctx.Done():
		case <-sub.ch:
		}
	}()
	return shareStream(ctx, out), nil
}

// workflowUpdated streams a workflow: first as it is now, then each time it changes, and ends
// once the workflow has ended (FINISHED, FAILED or CANCELLED). Each message is the whole
// workflow, so a subscriber that falls behind is not cut off: older states it has not read are
// dropped for newer ones, and the newest state always reaches it.
func (r *Resolver) workflowUpdated(ctx context.Context, id string) (<-chan *persistence.Workflow, error) {
	wid, err := decodeID("id", kindWorkflow, id)
	if err != nil {
		return nil, err
	}
	release, err := r.subs.acquire(ctx)
	if err != nil {
		return nil, err
	}
	f := persistence.WorkflowFilter{IDs: []int64{wid}}
	sub, _, err := r.hub.register(ctx, f)
	if err != nil {
		release()
		return nil, err
	}
	// Read after registering: a change that lands in between is both in this state and an event.
	current, err := r.store.WorkflowGet(ctx, wid)
	if err != nil {
		r.hub.unregister(sub)
		release()
		return nil, err
	}
	out := make(chan *persistence.Workflow, r.cfg.SubscriptionBuffer)
	out <- current
	go func() {
		defer release()
		defer close(out)
		defer func() { r.hub.unregister(sub) }()
		last := current
		for !last.Status.Terminal() {
			select {
			case <-ctx.Done():
				return
			case batch, ok := <-sub.ch:
				sub.take(batch)
				if !ok {
					// Dropped by the hub: register again and read the workflow as it is now.
					if sub, _, err = r.hub.register(ctx, f); err != nil {
						return
					}
					w, err := r.store.WorkflowGet(ctx, wid)
					if err != nil {
						return
					}
					batch = []*liveEvent{{workflow: w}}
				}
				// Versions only grow: an older snapshot than the one sent adds nothing.
				for _, e := range batch {
					if w := e.workflow; w != nil && w.Version > last.Version && !last.Status.Terminal() {
						sendLatest(out, w)
						last = w
					}
				}
			}
		}
	}()
	return out, nil
}

// sendLatest sends v without blocking: when the buffer is full it drops the oldest message, so the
// newest always gets through (this goroutine is the channel's only sender).
func sendLatest[T any](out chan T, v T) {
	select {
	case out <- v:
		return
	default:
	}
	select {
	case <-out:
	default:
	}
	out <- v
}
