package persistence

import (
	"context"
	"fmt"
	"time"
)

// Change events are kept for a window of their own (serve --event-retention), apart from the
// workflows they describe: they are trimmed from the head of the stream, oldest first, and a
// subscriber resuming from before the head is told its cursor expired (ChangeEventOldest).

// ChangeEventTrimParams is the input of ChangeEventTrim.
type ChangeEventTrimParams struct {
	// Before: events that happened before this time go.
	Before time.Time
	// Limit caps how many events one call looks at (default 5000).
	Limit int
}

// ChangeEventTrim deletes, from the head of the stream, events that happened before p.Before, at
// most p.Limit of them, and returns how many it deleted. It only ever looks at the p.Limit oldest
// events, so a call costs the same however many events are stored; fewer than p.Limit deleted
// means the head is now inside the window.
func (s *Store) ChangeEventTrim(ctx context.Context, p ChangeEventTrimParams) (int, error) {
	if p.Limit <= 0 {
		p.Limit = 5000
	}
	n, err := s.dialect.trimChangeEvents(ctx, s, UTC(p.Before), p.Limit)
	if err != nil {
		return 0, fmt.Errorf("error trimming change events: %w", err)
	}
	return n, nil
}

// ChangeEventOldest returns the cursor of the oldest event still stored, and false when none is.
func (s *Store) ChangeEventOldest(ctx context.Context) (EventCursor, bool, error) {
	c, err := s.dialect.changeEventTail(ctx, s)
	if err != nil {
		return EventCursor{}, false, fmt.Errorf("error reading the oldest change event: %w", err)
	}
	return c, c != (EventCursor{}), nil
}

// Before returns the position just before c in the stream: a subscriber resuming after it gets the
// event at c first.
func (c EventCursor) Before() EventCursor {
	if c.ID > 0 {
		c.ID--
	}
	return c
}
