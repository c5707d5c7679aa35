package graph

import (
	"context"
	"slices"
	"time"

	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cairnflow/cairn/graph/model"
	"github.com/cairnflow/cairn/persistence"
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

// follow reads the change events after a cursor until ctx ends, handing each non-empty batch to
// handle with the workflows it names. It reads again when the notifier hints that events were
// committed (on this node or, through PostgreSQL, on another) and at every poll interval, in case a
// hint was lost. handle returns false to stop.
func (r *Resolver) follow(ctx context.Context, cursor persistence.EventCursor, ids []int64, handle func([]*persistence.ChangeEvent, map[int64]*persistence.Workflow) bool) {
	hints, unsubscribe := r.engine.Notifier().Subscribe(persistence.TopicEvents)
	defer unsubscribe()
	poll := time.NewTicker(r.cfg.PollInterval)
	defer poll.Stop()
	for {
		for {
			events, err := r.store.ChangeEventList(ctx, persistence.ChangeEventListParams{After: cursor, Limit: eventBatch, WorkflowIDs: ids})
			if err != nil {
				if ctx.Err() == nil {
					r.log.WarnContext(ctx, "error reading change events for a subscription; retrying", "error", err)
				}
				break
			}
			if len(events) == 0 {
				break
			}
			wfIDs := make([]int64, 0, len(events))
			for _, ev := range events {
				wfIDs = append(wfIDs, ev.WorkflowID)
			}
			slices.Sort(wfIDs)
			wfs, err := r.store.WorkflowGetMany(ctx, slices.Compact(wfIDs))
			if err != nil {
				if ctx.Err() == nil {
					r.log.WarnContext(ctx, "error loading workflows for a subscription; retrying", "error", err)
				}
				break
			}
			byID := make(map[int64]*persistence.Workflow, len(wfs))
			for _, w := range wfs {
				byID[w.ID] = w
			}
			if !handle(events, byID) {
				return
			}
			last := events[len(events)-1]
			cursor = persistence.EventCursor{TxID: last.TxID, ID: last.ID}
			if len(events) < eventBatch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-hints:
		case <-poll.C:
		}
	}
}

// workflowEvents streams the change events matching a filter. The channel holds at most
// SubscriptionBuffer events: when the subscriber lets it fill up, the stream ends with a
// SLOW_SUBSCRIBER error carrying the cursor of the last event it was given, so that it resumes there
// and misses nothing. The engine never waits for a subscriber.
func (r *Resolver) workflowEvents(ctx context.Context, filter *model.WorkflowFilter, after *string) (<-chan *model.WorkflowEvent, error) {
	f, err := workflowFilter(filter)
	if err != nil {
		return nil, err
	}
	var cursor persistence.EventCursor
	if after != nil {
		if cursor, err = parseEventCursor(*after); err != nil {
			return nil, err
		}
	} else if cursor, err = r.store.ChangeEventHead(ctx); err != nil {
		return nil, err
	}
	size := r.cfg.SubscriptionBuffer
	out := make(chan *model.WorkflowEvent, size+1) // the spare slot is for the error
	go func() {
		defer close(out)
		sent := cursor
		r.follow(ctx, cursor, f.IDs, func(events []*persistence.ChangeEvent, wfs map[int64]*persistence.Workflow) bool {
			for _, ev := range events {
				w := wfs[ev.WorkflowID]
				if !matchEvent(f, ev, w) {
					sent = persistence.EventCursor{TxID: ev.TxID, ID: ev.ID}
					continue
				}
				if len(out) >= size {
					out <- model.NewFailedEvent(&gqlerror.Error{
						Message:    "the subscriber fell behind; subscribe again with after set to extensions.cursor",
						Extensions: map[string]any{"code": codeSlowSubscriber, "cursor": eventCursorOf(sent)},
					})
					return false
				}
				c := persistence.EventCursor{TxID: ev.TxID, ID: ev.ID}
				out <- model.NewWorkflowEvent(ev, eventCursorOf(c), encodeID(kindWorkflow, ev.WorkflowID), w)
				sent = c
			}
			return true
		})
	}()
	return out, nil
}

// workflowUpdated streams a workflow: first as it is now, then each time it changes. Each message
// is the whole workflow, so a subscriber that falls behind is not cut off: older states it has not
// read are dropped for newer ones, and the newest state always reaches it.
func (r *Resolver) workflowUpdated(ctx context.Context, id string) (<-chan *persistence.Workflow, error) {
	wid, err := decodeID("id", kindWorkflow, id)
	if err != nil {
		return nil, err
	}
	cursor, err := r.store.ChangeEventHead(ctx)
	if err != nil {
		return nil, err
	}
	// Read after the head: a change that lands in between is both in this state and an event.
	current, err := r.store.WorkflowGet(ctx, wid)
	if err != nil {
		return nil, err
	}
	out := make(chan *persistence.Workflow, r.cfg.SubscriptionBuffer)
	out <- current
	go func() {
		defer close(out)
		r.follow(ctx, cursor, []int64{wid}, func(_ []*persistence.ChangeEvent, wfs map[int64]*persistence.Workflow) bool {
			if w := wfs[wid]; w != nil {
				sendLatest(out, w)
			}
			return true
		})
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

// matchEvent applies a filter to an event and the workflow it changed (as it is now). Status and
// state are the event's: a subscriber to FINISHED sees the event that finished the workflow.
func matchEvent(f persistence.WorkflowFilter, ev *persistence.ChangeEvent, w *persistence.Workflow) bool {
	if len(f.IDs) > 0 && !slices.Contains(f.IDs, ev.WorkflowID) {
		return false
	}
	if len(f.Statuses) > 0 && !slices.Contains(f.Statuses, ev.Status) {
		return false
	}
	if len(f.States) > 0 && !slices.Contains(f.States, ev.State) {
		return false
	}
	if w == nil {
		return len(f.Types) == 0 && f.ExternalID == nil && f.BusinessKey == nil && f.ParentID == nil && f.RootID == nil &&
			f.ExecutorGroup == nil && len(f.ExecutorIDs) == 0 && f.CreatedAfter == nil && f.CreatedBefore == nil
	}
	return (len(f.Types) == 0 || slices.Contains(f.Types, w.Type)) &&
		eqPtr(f.ExternalID, w.ExternalID) && eqPtr(f.BusinessKey, w.BusinessKey) &&
		eqPtr(f.ParentID, w.ParentID) && eqPtr(f.RootID, w.RootID) &&
		(f.ExecutorGroup == nil || *f.ExecutorGroup == w.ExecutorGroup) &&
		(len(f.ExecutorIDs) == 0 || (w.ExecutorID != nil && slices.Contains(f.ExecutorIDs, *w.ExecutorID))) &&
		(f.CreatedAfter == nil || w.Created.After(*f.CreatedAfter)) &&
		(f.CreatedBefore == nil || w.Created.Before(*f.CreatedBefore))
}

// eqPtr reports whether an optional filter value is absent or equals the row's.
func eqPtr[T comparable](want, got *T) bool {
	return want == nil || (got != nil && *got == *want)
}
