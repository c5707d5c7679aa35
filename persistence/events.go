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
	if s.isPostgres() {
		if err := s.changeEventInsertPG(ctx, events); err != nil {
			return fmt.Errorf("error writing %d change events: %w", len(events), err)
		}
		return nil
	}
	if _, err := s.idb.NewInsert().Model(&events).Returning("id").Exec(ctx); err != nil {
		return fmt.Errorf("error writing %d change events: %w", len(events), err)
	}
	return nil
}

// ChangeEventListParams is the input of ChangeEventList.
type ChangeEventListParams struct {
	After EventCursor
	Limit int
	// WorkflowIDs limits the events to these workflows (none: all).
	WorkflowIDs []int64
}

// ChangeEventList returns committed events after a cursor, in stream order. On PostgreSQL it reads
// only events of transactions older than the oldest one still running, so an event that commits
// later can never land before a cursor a reader already holds.
func (s *Store) ChangeEventList(ctx context.Context, p ChangeEventListParams) ([]*ChangeEvent, error) {
	if p.Limit <= 0 {
		p.Limit = 500
	}
	var events []*ChangeEvent
	var q string
	args := []any{}
	if s.isPostgres() {
		q = `SELECT id, txid::text::bigint AS txid, workflow_id, type, action_id, status, state, at FROM change_events
			WHERE (txid > ?::text::xid8 OR (txid = ?::text::xid8 AND id > ?))
			AND txid < pg_snapshot_xmin(pg_current_snapshot())`
		args = append(args, p.After.TxID, p.After.TxID, p.After.ID)
	} else {
		q = `SELECT id, txid, workflow_id, type, action_id, status, state, at FROM change_events WHERE id > ?`
		args = append(args, p.After.ID)
	}
	if len(p.WorkflowIDs) > 0 {
		q += " AND workflow_id IN (?)"
		args = append(args, bunIn(p.WorkflowIDs))
	}
	q += " ORDER BY txid, id LIMIT ?"
	args = append(args, p.Limit)
	if err := s.idb.NewRaw(q, args...).Scan(ctx, &events); err != nil {
		return nil, fmt.Errorf("error reading change events: %w", err)
	}
	return events, nil
}

// ChangeEventHead returns the cursor of the newest readable event (the zero cursor when none): a
// subscriber that starts "from now" begins after it.
func (s *Store) ChangeEventHead(ctx context.Context) (EventCursor, error) {
	var c EventCursor
	var q string
	if s.isPostgres() {
		q = `SELECT txid::text::bigint AS tx_id, id FROM change_events WHERE txid < pg_snapshot_xmin(pg_current_snapshot())
			ORDER BY txid DESC, id DESC LIMIT 1`
	} else {
		q = `SELECT txid AS tx_id, id FROM change_events ORDER BY id DESC LIMIT 1`
	}
	var rows []struct {
		TxID int64 `bun:"tx_id"`
		ID   int64 `bun:"id"`
	}
	if err := s.idb.NewRaw(q).Scan(ctx, &rows); err != nil {
		return c, fmt.Errorf("error reading the head of the change events: %w", err)
	}
	if len(rows) == 1 {
		c = EventCursor{TxID: rows[0].TxID, ID: rows[0].ID}
	}
	return c, nil
}
