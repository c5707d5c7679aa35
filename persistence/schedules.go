package persistence

import (
	"context"
	"fmt"
	"time"
)

// ScheduleInsert stores a schedule and sets its ID.
func (s *Store) ScheduleInsert(ctx context.Context, sc *Schedule) error {
	now := Now()
	sc.Created, sc.Modified = now, now
	if len(sc.Input) == 0 {
		sc.Input = emptyObject
	}
	if _, err := s.idb.NewInsert().Model(sc).Returning("id").Exec(ctx); err != nil {
		return fmt.Errorf("error storing schedule: %w", s.conflictOr(err))
	}
	return nil
}

// ScheduleList returns every schedule in ID order.
func (s *Store) ScheduleList(ctx context.Context) ([]*Schedule, error) {
	var out []*Schedule
	if err := s.idb.NewSelect().Model(&out).OrderExpr("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("error listing schedules: %w", err)
	}
	return out, nil
}

// ScheduleGet returns one schedule.
func (s *Store) ScheduleGet(ctx context.Context, id int64) (*Schedule, error) {
	sc := new(Schedule)
	q := s.idb.NewSelect().Model(sc).Where("id = ?", id)
	if s.InTx() {
		q = s.forUpdate(q, false)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, noRows(err, "schedule", id)
	}
	return sc, nil
}

// ScheduleGetByName returns the schedule of a name.
func (s *Store) ScheduleGetByName(ctx context.Context, name string) (*Schedule, error) {
	sc := new(Schedule)
	if err := s.idb.NewSelect().Model(sc).Where("name = ?", name).Scan(ctx); err != nil {
		return nil, noRows(err, "schedule", name)
	}
	return sc, nil
}

// ScheduleDelete deletes a schedule (the workflows it started stay).
func (s *Store) ScheduleDelete(ctx context.Context, id int64) error {
	res, err := s.idb.NewDelete().Model((*Schedule)(nil)).Where("id = ?", id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("error deleting schedule %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return notFound("schedule", id)
	}
	return nil
}

// ScheduleDue returns unpaused schedules whose next fire time has come, oldest fire first. It reads
// outside a transaction, so its row lock (SKIP LOCKED, where the database has row locks) lasts only
// the statement and only passes over rows another node is writing: it does not make a fire one
// node's. Two nodes may both see a fire; what keeps it to one run is the start's idempotency key
// (the idempotency_keys primary key) and ScheduleAdvance's conditional update (see
// engine.Engine's fireSchedules).
func (s *Store) ScheduleDue(ctx context.Context, now time.Time, limit int64) ([]*Schedule, error) {
	var out []*Schedule
	q := s.idb.NewSelect().Model(&out).Where("paused = ? AND next_fire IS NOT NULL AND next_fire <= ?", false, UTC(now)).
		OrderExpr("next_fire, id").Limit(limit)
	q = s.forUpdate(q, true)
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("error loading due schedules: %w", err)
	}
	return out, nil
}

// ScheduleSave writes every column of a schedule.
func (s *Store) ScheduleSave(ctx context.Context, sc *Schedule) error {
	sc.Modified = Now()
	res, err := s.idb.NewUpdate().Model(sc).WherePK().Exec(ctx)
	if err != nil {
		return fmt.Errorf("error saving schedule %d: %w", sc.ID, s.conflictOr(err))
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return notFound("schedule", sc.ID)
	}
	return nil
}

// ScheduleAdvance records that a schedule fired at lastFire, skipped skipped fire times, and next
// fires at next (nil: never), unless another node advanced it first: the update is conditional on
// next_fire still being wasNext, so of the nodes that fired one time, one moves the schedule on and
// counts its skips (the others get false).
func (s *Store) ScheduleAdvance(ctx context.Context, id int64, wasNext time.Time, lastFire *time.Time, next *time.Time, skipped int64) (bool, error) {
	q := s.idb.NewUpdate().Model((*Schedule)(nil)).Set("next_fire = ?", UTCPtr(next)).Set("modified = ?", Now()).
		Where("id = ? AND next_fire = ?", id, UTC(wasNext))
	if skipped > 0 {
		q = q.Set("skipped_fires = skipped_fires + ?", skipped)
	}
	if lastFire != nil {
		q = q.Set("last_fire = ?", UTC(*lastFire))
	}
	res, err := q.Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("error advancing schedule %d: %w", id, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// WorkflowRunningWithLaunchToken reports whether a workflow with a launch token has not ended.
func (s *Store) WorkflowRunningWithLaunchToken(ctx context.Context, token string) (bool, error) {
	n, err := s.idb.NewSelect().Model((*Workflow)(nil)).
		Where("launch_token = ? AND status NOT IN (?)", token, bunIn(terminalStatuses)).
		Limit(1).Count(ctx)
	if err != nil {
		return false, fmt.Errorf("error looking for running workflows of %s: %w", token, err)
	}
	return n > 0, nil
}

// SchedulePageParams selects a page of schedules, oldest first.
type SchedulePageParams struct {
	// Limit is the most schedules to return (0: all).
	Limit int
	// AfterID keeps the schedules created after this one (0: from the oldest).
	AfterID int64
}

// SchedulePage returns a page of schedules, oldest first.
func (s *Store) SchedulePage(ctx context.Context, p SchedulePageParams) ([]*Schedule, error) {
	var out []*Schedule
	q := s.idb.NewSelect().Model(&out).Where("id > ?", p.AfterID).OrderExpr("id")
	if p.Limit > 0 {
		q = q.Limit(int64(p.Limit))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("error listing schedules: %w", err)
	}
	return out, nil
}
