package persistence

import (
	"context"
	"fmt"
	"time"
)

// AlertDeliveryClaim leases up to limit pending deliveries that are due and leased by no live
// sender to owner until now+lease. Each row is taken by a conditional update, so two nodes never
// send the same attempt, and a node that dies leaves its rows to another once the lease runs out.
func (s *Store) AlertDeliveryClaim(ctx context.Context, owner string, lease time.Duration, limit int) ([]*AlertDelivery, error) {
	now := Now()
	var due []*AlertDelivery
	if err := s.idb.NewSelect().Model(&due).Where("status = ?", DeliveryPending).Where("next_attempt <= ?", now).
		Where("(lease_until IS NULL OR lease_until < ?)", now).OrderExpr("next_attempt, id").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("error reading the due alert deliveries: %w", err)
	}
	until := now.Add(lease)
	var out []*AlertDelivery
	for _, d := range due {
		res, err := s.idb.NewUpdate().Model((*AlertDelivery)(nil)).Set("lease_owner = ?", owner).Set("lease_until = ?", until).
			Where("id = ?", d.ID).Where("status = ?", DeliveryPending).Where("(lease_until IS NULL OR lease_until < ?)", now).Exec(ctx)
		if err != nil {
			return out, fmt.Errorf("error leasing alert delivery %d: %w", d.ID, err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			d.LeaseOwner, d.LeaseUntil = &owner, &until
			out = append(out, d)
		}
	}
	return out, nil
}

// ScheduleClearAlertRule takes a deleted rule off the schedules that carried it.
func (s *Store) ScheduleClearAlertRule(ctx context.Context, ruleID int64) error {
	if _, err := s.idb.NewUpdate().Model((*Schedule)(nil)).Set("alert_rule_id = NULL").Where("alert_rule_id = ?", ruleID).Exec(ctx); err != nil {
		return fmt.Errorf("error taking alert rule %d off its schedules: %w", ruleID, err)
	}
	s.alerts.invalidate()
	return nil
}

// AlertAttempt is the outcome of one POST of a delivery.
type AlertAttempt struct {
	// Status is DELIVERED, FAILED (no attempt left) or PENDING (to be tried again at Next).
	Status       DeliveryStatus
	Next         time.Time
	Error        *string
	ResponseCode *int
}

// AlertDeliveryRecord records an attempt of a delivery owner holds; it reports false when the
// lease was lost (another node took the row over).
func (s *Store) AlertDeliveryRecord(ctx context.Context, id int64, owner string, a AlertAttempt) (bool, error) {
	q := s.idb.NewUpdate().Model((*AlertDelivery)(nil)).Set("status = ?", a.Status).Set("attempts = attempts + 1").
		Set("last_error = ?", a.Error).Set("response_code = ?", a.ResponseCode).Set("lease_owner = NULL").Set("lease_until = NULL").
		Where("id = ?", id).Where("lease_owner = ?", owner).Where("status = ?", DeliveryPending)
	if a.Status == DeliveryPending {
		q = q.Set("next_attempt = ?", UTC(a.Next))
	} else {
		q = q.Set("finished = ?", Now())
	}
	res, err := q.Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("error recording alert delivery %d: %w", id, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// AlertDeliveryListParams selects a page of deliveries, newest first.
type AlertDeliveryListParams struct {
	// BeforeID keeps the deliveries older than this one (0: from the newest).
	BeforeID   int64
	Limit      int
	RuleID     *int64
	WorkflowID *int64
	Status     *DeliveryStatus
}

// AlertDeliveryList returns a page of deliveries, newest first.
func (s *Store) AlertDeliveryList(ctx context.Context, p AlertDeliveryListParams) ([]*AlertDelivery, error) {
	var out []*AlertDelivery
	q := s.idb.NewSelect().Model(&out).OrderExpr("id DESC").Limit(int64(p.Limit))
	if p.BeforeID > 0 {
		q = q.Where("id < ?", p.BeforeID)
	}
	if p.RuleID != nil {
		q = q.Where("rule_id = ?", *p.RuleID)
	}
	if p.WorkflowID != nil {
		q = q.Where("workflow_id = ?", *p.WorkflowID)
	}
	if p.Status != nil {
		q = q.Where("status = ?", *p.Status)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("error reading the alert deliveries: %w", err)
	}
	return out, nil
}
