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
	q := `DELETE FROM change_events WHERE (txid, id) IN (
		SELECT h.txid, h.id FROM (SELECT txid, id, at FROM change_events ORDER BY txid, id LIMIT ?) AS h WHERE h.at < ?)`
	if !s.isPostgres() {
		// txid is always 0 here: the stream is in id order, the table's rowid.
		q = `DELETE FROM change_events WHERE id IN (
			SELECT h.id FROM (SELECT id, at FROM change_events ORDER BY id LIMIT ?) AS h WHERE h.at < ?)`
	}
	res, err := s.idb.NewRaw(q, p.Limit, UTC(p.Before)).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("error trimming change events: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// ChangeEventOldest returns the cursor of the oldest event still stored, and false when none is.
func (s *Store) ChangeEventOldest(ctx context.Context) (EventCursor, bool, error) {
	q := `SELECT txid::text::bigint AS tx_id, id FROM change_events ORDER BY txid, id LIMIT 1`
	if !s.isPostgres() {
		q = `SELECT txid AS tx_id, id FROM change_events ORDER BY id LIMIT 1`
	}
	var rows []struct {
		TxID int64 `bun:"tx_id"`
		ID   int64 `bun:"id"`
	}
	if err := s.idb.NewRaw(q).Scan(ctx, &rows); err != nil {
		return EventCursor{}, false, fmt.Errorf("error reading the oldest change event: %w", err)
	}
	if len(rows) == 0 {
		return EventCursor{}, false, nil
	}
	return EventCursor{TxID: rows[0].TxID, ID: rows[0].ID}, true, nil
}

// Before returns the position just before c in the stream: a subscriber resuming after it gets the
// event at c first.
func (c EventCursor) Before() EventCursor {
	if c.ID > 0 {
		c.ID--
	}
	return c
}
