package persistence

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// AuditEntry is one operator act in the audit log.
type AuditEntry struct {
	bun.BaseModel `bun:"table:audit_log,alias:al"`

	ID    int64     `bun:"id,pk,autoincrement"`
	At    time.Time `bun:"at,notnull"`
	Actor string    `bun:"actor,notnull"`
	// Action names the act (the mutation's name: startBulkOperation, deploy, createSchedule...).
	Action string `bun:"action,notnull"`
	// Subject is what it acted on, as "Kind:row" (BulkOperation:7, Schedule:3) or a name (a type,
	// a token's name).
	Subject *string         `bun:"subject"`
	Reason  *string         `bun:"reason"`
	Details json.RawMessage `bun:"details,type:jsonb,nullzero"`
}

// AuditInsert appends an entry to the audit log (At is set to now when zero).
func (s *Store) AuditInsert(ctx context.Context, e *AuditEntry) error {
	if e.At.IsZero() {
		e.At = Now()
	}
	if _, err := s.idb.NewInsert().Model(e).Returning("id").Exec(ctx); err != nil {
		return fmt.Errorf("error writing the audit log: %w", err)
	}
	return nil
}

// AuditListParams selects a page of the audit log, newest first.
type AuditListParams struct {
	// BeforeID keeps the entries older than this one (0: from the newest).
	BeforeID int64
	Limit    int
	Actor    *string
	// Since and Until keep the entries at or after Since and before Until.
	Since, Until *time.Time
}

// AuditList returns a page of the audit log, newest first.
func (s *Store) AuditList(ctx context.Context, p AuditListParams) ([]*AuditEntry, error) {
	var out []*AuditEntry
	q := s.idb.NewSelect().Model(&out).OrderExpr("id DESC").Limit(int64(p.Limit))
	if p.BeforeID > 0 {
		q = q.Where("id < ?", p.BeforeID)
	}
	if p.Actor != nil {
		q = q.Where("actor = ?", *p.Actor)
	}
	if p.Since != nil {
		q = q.Where("at >= ?", UTC(*p.Since))
	}
	if p.Until != nil {
		q = q.Where("at < ?", UTC(*p.Until))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("error reading the audit log: %w", err)
	}
	return out, nil
}
