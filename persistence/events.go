package persistence

import (
	"context"
	"fmt"
)

// EventCursor is a position in the change-event stream: events are read in (TxID, ID) order.
type EventCursor struct {
	TxID int64
	ID   int64
}

// After reports whether c comes later in the stream than o.
func (c EventCursor) After(o EventCursor) bool {
	return c.TxID > o.TxID || (c.TxID == o.TxID && c.ID > o.ID)
}

// CursorOf returns the position of an event in the stream.
func (e *ChangeEvent) CursorOf() EventCursor { return EventCursor{TxID: e.TxID, ID: e.ID} }

// ChangeEventInsertMany writes change events in the caller's transaction.
func (s *Store) ChangeEventInsertMany(ctx context.Context, events []*ChangeEvent) error {
	if len(events) == 0 {
		return nil
	}
	for _, e := range events {
		if e.At.IsZero() {
			e.At = Now()
		}
	}
	if err := s.dialect.insertChangeEvents(ctx, s, events); err != nil {
		return fmt.Errorf("error writing %d change events: %w", len(events), err)
	}
	return s.enqueueAlerts(ctx, events)
}

// ChangeEventListParams is the input of ChangeEventList.
type ChangeEventListParams struct {
	After EventCursor
	Limit int
	// WorkflowIDs limits the events to these workflows (none: all).
	WorkflowIDs []int64
}

// ChangeEventList returns committed events after a cursor, in stream order. An event that commits
// later never lands before a cursor a reader already holds: each dialect orders the stream by
// commit (see its listChangeEvents).
func (s *Store) ChangeEventList(ctx context.Context, p ChangeEventListParams) ([]*ChangeEvent, error) {
	if p.Limit <= 0 {
		p.Limit = 500
	}
	events, err := s.dialect.listChangeEvents(ctx, s, p)
	if err != nil {
		return nil, fmt.Errorf("error reading change events: %w", err)
	}
	return events, nil
}

// scanChangeEvents runs a dialect's selection of change events after a cursor, limited to the
// workflows asked for, in stream order.
func scanChangeEvents(ctx context.Context, s *Store, q string, args []any, p ChangeEventListParams) ([]*ChangeEvent, error) {
	var events []*ChangeEvent
	if len(p.WorkflowIDs) > 0 {
		q += " AND workflow_id IN (?)"
		args = append(args, bunIn(p.WorkflowIDs))
	}
	q += " ORDER BY txid, id LIMIT ?"
	args = append(args, p.Limit)
	if err := s.idb.NewRaw(q, args...).Scan(ctx, &events); err != nil {
		return nil, err
	}
	return events, nil
}

// ChangeEventHead returns the cursor of the newest readable event (the zero cursor when none): a
// subscriber that starts "from now" begins after it.
func (s *Store) ChangeEventHead(ctx context.Context) (EventCursor, error) {
	c, err := s.dialect.changeEventHead(ctx, s)
	if err != nil {
		return c, fmt.Errorf("error reading the head of the change events: %w", err)
	}
	return c, nil
}

// scanEventCursor runs a dialect's query for the newest readable cursor (columns tx_id, id).
func scanEventCursor(ctx context.Context, s *Store, q string) (EventCursor, error) {
	var c EventCursor
	var rows []struct {
		TxID int64 `bun:"tx_id"`
		ID   int64 `bun:"id"`
	}
	if err := s.idb.NewRaw(q).Scan(ctx, &rows); err != nil {
		return c, err
	}
	if len(rows) == 1 {
		c = EventCursor{TxID: rows[0].TxID, ID: rows[0].ID}
	}
	return c, nil
}
