package model

import (
	"context"
	"sync"
	"time"

	"github.com/cairnflow/cairn/persistence"
)

// WorkflowEvent is one change event sent to a subscriber, or, made by NewFailedEvent, the last
// message of a subscription that must end with an error (it fell behind).
type WorkflowEvent struct {
	event    *persistence.ChangeEvent
	cursor   string
	id       string
	workflow *persistence.Workflow

	err  error
	once sync.Once

	// shared holds the responses subscriptions made of the event, by their shape (see Share).
	sharedMu sync.Mutex
	shared   map[[32]byte]*SharedResponse
}

// MaxSharedShapes bounds the responses one event keeps for subscriptions to share: a node whose
// subscribers ask in more ways than that makes the others' responses each for itself.
const MaxSharedShapes = 32

// SharedResponse is the response one subscription made of an event, kept for the subscriptions
// that would make the same response of it (the same query, variables and caller): its maker
// calls Fill once, the others Wait for it.
type SharedResponse struct {
	done chan struct{}
	data []byte
}

// Share returns the response of the subscriptions of shape key to the event, and whether the
// caller is the one to make it (and then Fill it). It returns nil and true when the event keeps
// MaxSharedShapes responses already: the caller makes its own and keeps it to itself.
func (e *WorkflowEvent) Share(key [32]byte) (r *SharedResponse, maker bool) {
	e.sharedMu.Lock()
	defer e.sharedMu.Unlock()
	if r = e.shared[key]; r != nil {
		return r, false
	}
	if len(e.shared) >= MaxSharedShapes {
		return nil, true
	}
	if e.shared == nil {
		e.shared = map[[32]byte]*SharedResponse{}
	}
	r = &SharedResponse{done: make(chan struct{})}
	e.shared[key] = r
	return r, true
}

// Fill gives the response's data to the subscriptions waiting for it; nil when it cannot be
// shared (it carried errors): each then makes its own. The data is never written afterwards.
func (r *SharedResponse) Fill(data []byte) {
	r.data = data
	close(r.done)
}

// Wait returns the data its maker filled the response with, once it has; false when the maker
// could not share it or ctx ended first.
func (r *SharedResponse) Wait(ctx context.Context) ([]byte, bool) {
	select {
	case <-r.done:
		return r.data, r.data != nil
	default:
	}
	select {
	case <-r.done:
		return r.data, r.data != nil
	case <-ctx.Done():
		return nil, false
	}
}

// NewWorkflowEvent wraps a change event with its opaque cursor, the workflow's opaque ID and the
// workflow as loaded when the event was read.
func NewWorkflowEvent(ev *persistence.ChangeEvent, cursor, workflowID string, wf *persistence.Workflow) *WorkflowEvent {
	return &WorkflowEvent{event: ev, cursor: cursor, id: workflowID, workflow: wf}
}

// NewFailedEvent returns an event whose first field read fails with err: gqlgen then sends the
// subscriber one response carrying err (and the event as null) before the stream ends.
func NewFailedEvent(err error) *WorkflowEvent {
	return &WorkflowEvent{event: &persistence.ChangeEvent{}, err: err}
}

// fail returns the event's error to the first field that asks, so that the response carries it
// once; the others read zero values, discarded when the error nulls the event.
func (e *WorkflowEvent) fail() error {
	var err error
	e.once.Do(func() { err = e.err })
	return err
}

// Cursor is the event's position in the stream.
func (e *WorkflowEvent) Cursor() (string, error) { return e.cursor, e.fail() }

// Type is what happened.
func (e *WorkflowEvent) Type() (string, error) { return e.event.Type, e.fail() }

// At is when it happened.
func (e *WorkflowEvent) At() (time.Time, error) { return e.event.At, e.fail() }

// Status is the workflow's status after the event.
func (e *WorkflowEvent) Status() (persistence.Status, error) { return e.event.Status, e.fail() }

// State is the workflow's state after the event.
func (e *WorkflowEvent) State() (string, error) { return e.event.State, e.fail() }

// WorkflowID is the workflow's opaque ID.
func (e *WorkflowEvent) WorkflowID() (string, error) { return e.id, e.fail() }

// Loaded returns the workflow as read with the event (nil for a failed event).
func (e *WorkflowEvent) Loaded() *persistence.Workflow { return e.workflow }

// ActionID returns the ID of the action the event wrote, if any.
func (e *WorkflowEvent) ActionID() *int64 { return e.event.ActionID }

// Failed reports whether this is the error that ends a subscription.
func (e *WorkflowEvent) Failed() bool { return e.err != nil }
