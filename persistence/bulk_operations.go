package persistence

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// BulkStatus is the lifecycle status of a bulk operation.
type BulkStatus string

// The statuses of a bulk operation.
const (
	BulkPending   BulkStatus = "PENDING"
	BulkRunning   BulkStatus = "RUNNING"
	BulkSucceeded BulkStatus = "SUCCEEDED"
	BulkFailed    BulkStatus = "FAILED"
	BulkCancelled BulkStatus = "CANCELLED"
)

// Ended reports whether a bulk operation is done with (nothing more is changed by it).
func (s BulkStatus) Ended() bool {
	return s == BulkSucceeded || s == BulkFailed || s == BulkCancelled
}

// The statuses of one target of a bulk operation.
const (
	BulkTargetPending   = "PENDING"
	BulkTargetSucceeded = "SUCCEEDED"
	BulkTargetFailed    = "FAILED"
)

// BulkOperation is one operator's action on every workflow a filter matched when it started.
type BulkOperation struct {
	bun.BaseModel `bun:"table:bulk_operations,alias:bo"`

	ID     int64      `bun:"id,pk,autoincrement"`
	Action string     `bun:"action,notnull"`
	Status BulkStatus `bun:"status,notnull"`
	DryRun bool       `bun:"dry_run,notnull"`
	// Filter is the WorkflowFilter the targets were selected with (JSON).
	Filter        json.RawMessage `bun:"filter,type:jsonb,notnull"`
	Reason        *string         `bun:"reason"`
	Actor         string          `bun:"actor,notnull"`
	State         *string         `bun:"state"`
	SignalName    *string         `bun:"signal_name"`
	SignalPayload json.RawMessage `bun:"signal_payload,type:jsonb,nullzero"`
	// Total is how many workflows the filter matched; WouldChange how many of them the action
	// applies to by their status when the operation started (a dry run's answer).
	Total       int64 `bun:"total,notnull"`
	WouldChange int64 `bun:"would_change,notnull"`
	Processed   int64 `bun:"processed,notnull"`
	Succeeded   int64 `bun:"succeeded,notnull"`
	Failed      int64 `bun:"failed,notnull"`
	// LeaseOwner is the runner working on the operation until LeaseUntil.
	LeaseOwner *string    `bun:"lease_owner"`
	LeaseUntil *time.Time `bun:"lease_until"`
	Created    time.Time  `bun:"created,notnull"`
	Modified   time.Time  `bun:"modified,notnull"`
	Finished   *time.Time `bun:"finished"`
}

// BulkTarget is one workflow of a bulk operation's snapshot, and what became of it.
type BulkTarget struct {
	bun.BaseModel `bun:"table:bulk_operation_targets,alias:bt"`

	OperationID int64   `bun:"operation_id,pk"`
	WorkflowID  int64   `bun:"workflow_id,pk"`
	Status      string  `bun:"status,notnull"`
	Error       *string `bun:"error"`
}

// BulkOperationInsert stores a bulk operation and, unless it is a dry run, snapshots its targets:
// one pending row for every workflow f matches now, in the same statement. It sets op's ID and
// Total. Run it in a transaction.
func (s *Store) BulkOperationInsert(ctx context.Context, op *BulkOperation, f WorkflowFilter) error {
	now := Now()
	op.Created, op.Modified = now, now
	if _, err := s.idb.NewInsert().Model(op).Returning("id").Exec(ctx); err != nil {
		return fmt.Errorf("error storing bulk operation: %w", err)
	}
	if op.DryRun {
		return nil
	}
	sel := f.apply(s.idb.NewSelect().TableExpr("workflows AS w").ColumnExpr("?, w.id, ?", op.ID, BulkTargetPending))
	res, err := s.idb.NewRaw("INSERT INTO bulk_operation_targets (operation_id, workflow_id, status) ?", sel).Exec(ctx)
	if err != nil {
		return fmt.Errorf("error snapshotting the targets of bulk operation %d: %w", op.ID, err)
	}
	n, _ := res.RowsAffected()
	op.Total = n
	_, err = s.idb.NewUpdate().Model(op).Column("total").WherePK().Exec(ctx)
	return err
}

// BulkOperationGet returns one bulk operation; in a transaction it locks the row.
func (s *Store) BulkOperationGet(ctx context.Context, id int64) (*BulkOperation, error) {
	op := new(BulkOperation)
	q := s.idb.NewSelect().Model(op).Where("id = ?", id)
	if s.InTx() {
		q = s.forUpdate(q, false)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, noRows(err, "bulk operation", id)
	}
	return op, nil
}

// BulkOperationPage returns up to limit bulk operations, newest first, older than beforeID (0:
// from the newest).
func (s *Store) BulkOperationPage(ctx context.Context, beforeID int64, limit int) ([]*BulkOperation, error) {
	var out []*BulkOperation
	q := s.idb.NewSelect().Model(&out).OrderExpr("id DESC").Limit(int64(limit))
	if beforeID > 0 {
		q = q.Where("id < ?", beforeID)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("error listing bulk operations: %w", err)
	}
	return out, nil
}

// BulkOperationSave writes every column of a bulk operation.
func (s *Store) BulkOperationSave(ctx context.Context, op *BulkOperation) error {
	op.Modified = Now()
	if _, err := s.idb.NewUpdate().Model(op).WherePK().Exec(ctx); err != nil {
		return fmt.Errorf("error saving bulk operation %d: %w", op.ID, err)
	}
	return nil
}

// BulkOperationLeasable returns the IDs of up to limit operations still to be worked on whose
// lease is free or ran out at now, oldest first.
func (s *Store) BulkOperationLeasable(ctx context.Context, now time.Time, limit int) ([]int64, error) {
	var ids []int64
	err := s.idb.NewSelect().Model((*BulkOperation)(nil)).Column("id").
		Where("status IN (?)", bunIn([]BulkStatus{BulkPending, BulkRunning})).
		Where("(lease_until IS NULL OR lease_until < ?)", UTC(now)).
		OrderExpr("id").Limit(int64(limit)).Scan(ctx, &ids)
	if err != nil {
		return nil, fmt.Errorf("error listing bulk operations to run: %w", err)
	}
	return ids, nil
}

// BulkOperationLease gives an operation to owner until until, unless another owner holds an
// unexpired lease on it or it has ended; it reports whether owner has it now.
func (s *Store) BulkOperationLease(ctx context.Context, id int64, owner string, now, until time.Time) (bool, error) {
	res, err := s.idb.NewUpdate().Model((*BulkOperation)(nil)).
		Set("lease_owner = ?", owner).Set("lease_until = ?", UTC(until)).Set("modified = ?", Now()).
		Where("id = ? AND status IN (?)", id, bunIn([]BulkStatus{BulkPending, BulkRunning})).
		Where("(lease_until IS NULL OR lease_until < ? OR lease_owner = ?)", UTC(now), owner).Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("error leasing bulk operation %d: %w", id, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// BulkTargetsPending returns the workflow IDs of up to limit pending targets of an operation above
// afterID, in workflow order: a runner that goes through them in order passes the last one it
// marked, and its index range starts there instead of crossing every target already done.
func (s *Store) BulkTargetsPending(ctx context.Context, opID, afterID int64, limit int) ([]int64, error) {
	var ids []int64
	err := s.idb.NewSelect().Model((*BulkTarget)(nil)).Column("workflow_id").
		Where("operation_id = ? AND status = ? AND workflow_id > ?", opID, BulkTargetPending, afterID).
		OrderExpr("workflow_id").Limit(int64(limit)).Scan(ctx, &ids)
	if err != nil {
		return nil, fmt.Errorf("error reading the targets of bulk operation %d: %w", opID, err)
	}
	return ids, nil
}

// BulkTargetsMark records what became of targets of an operation: the workflows in succeeded
// changed, those in failed did not (with why). Run it in the transaction of the changes.
func (s *Store) BulkTargetsMark(ctx context.Context, opID int64, succeeded []int64, failed map[int64]string) error {
	if len(succeeded) > 0 {
		if _, err := s.idb.NewUpdate().Model((*BulkTarget)(nil)).Set("status = ?", BulkTargetSucceeded).
			Where("operation_id = ? AND workflow_id IN (?)", opID, bunIn(succeeded)).Exec(ctx); err != nil {
			return fmt.Errorf("error marking the targets of bulk operation %d: %w", opID, err)
		}
	}
	for id, why := range failed {
		if _, err := s.idb.NewUpdate().Model((*BulkTarget)(nil)).Set("status = ?", BulkTargetFailed).Set("error = ?", why).
			Where("operation_id = ? AND workflow_id = ?", opID, id).Exec(ctx); err != nil {
			return fmt.Errorf("error marking the targets of bulk operation %d: %w", opID, err)
		}
	}
	return nil
}

// BulkFailurePage returns up to limit targets of an operation that could not be changed, in
// workflow order, after the workflow afterID.
func (s *Store) BulkFailurePage(ctx context.Context, opID, afterID int64, limit int) ([]*BulkTarget, error) {
	var out []*BulkTarget
	err := s.idb.NewSelect().Model(&out).Where("operation_id = ? AND status = ? AND workflow_id > ?", opID, BulkTargetFailed, afterID).
		OrderExpr("workflow_id").Limit(int64(limit)).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("error reading the failures of bulk operation %d: %w", opID, err)
	}
	return out, nil
}
