// Package benchdata holds the statements only cairn bench makes: finding the first open workflow
// of its run, and deleting what its run made from a database it was given. They run on a Store's
// Bun handle and are no part of the Store the engine and the API use.
package benchdata

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/cairnflow/cairn/persistence"
)

// WorkflowIDRangeParams selects workflows by a range of IDs and their statuses.
type WorkflowIDRangeParams struct {
	// FromID and ToID bound the IDs, both included.
	FromID, ToID int64
	// Statuses limits the selection to these statuses (none: all).
	Statuses []persistence.Status
}

// WorkflowFirstInIDRange returns the lowest ID in a range whose workflow is in one of the statuses,
// or 0 when there is none. It reads the primary key upwards and stops at the first match, so a
// caller that narrows the range as the low end settles (a benchmark waiting for its run to end)
// pays little per call however big the range.
func WorkflowFirstInIDRange(ctx context.Context, s *persistence.Store, p WorkflowIDRangeParams) (int64, error) {
	var ids []int64
	q := s.Bun().NewSelect().Model((*persistence.Workflow)(nil)).Column("w.id").Where("w.id BETWEEN ? AND ?", p.FromID, p.ToID)
	if len(p.Statuses) > 0 {
		q = q.Where("w.status IN (?)", bun.List(p.Statuses))
	}
	if err := q.OrderExpr("w.id").Limit(1).Scan(ctx, &ids); err != nil {
		return 0, fmt.Errorf("error looking for workflows %d to %d: %w", p.FromID, p.ToID, err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	return ids[0], nil
}

// WorkflowDelete deletes workflows with every row of their history and their change events,
// whatever their status (the engine purges with WorkflowPurge and trims change events by age).
// It returns how many workflows it deleted.
func WorkflowDelete(ctx context.Context, s *persistence.Store, ids []int64) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	var n int
	err := s.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		for _, table := range append(persistence.HistoryTables(), "change_events") {
			if _, err := tx.Bun().NewDelete().TableExpr(table).Where("workflow_id IN (?)", bun.List(ids)).Exec(ctx); err != nil {
				return fmt.Errorf("deleting from %s: %w", table, err)
			}
		}
		res, err := tx.Bun().NewDelete().Model((*persistence.Workflow)(nil)).Where("id IN (?)", bun.List(ids)).Exec(ctx)
		if err != nil {
			return err
		}
		gone, _ := res.RowsAffected()
		n = int(gone)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("error deleting %d workflows: %w", len(ids), err)
	}
	return n, nil
}

// ExecutorDeleteParams selects executors to delete: those of one process (host and PID) registered
// after an ID.
type ExecutorDeleteParams struct {
	AfterID int64
	Host    string
	PID     int
}

// ExecutorDelete deletes the executor rows a process registered.
func ExecutorDelete(ctx context.Context, s *persistence.Store, p ExecutorDeleteParams) error {
	if _, err := s.Bun().NewDelete().Model((*persistence.Executor)(nil)).
		Where("id > ? AND host = ? AND pid = ?", p.AfterID, p.Host, p.PID).Exec(ctx); err != nil {
		return fmt.Errorf("error deleting the executors of %s/%d: %w", p.Host, p.PID, err)
	}
	return nil
}

// DefinitionDelete deletes definition versions by row ID (workflows keep naming their type and
// version).
func DefinitionDelete(ctx context.Context, s *persistence.Store, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := s.Bun().NewDelete().Model((*persistence.Definition)(nil)).Where("id IN (?)", bun.List(ids)).Exec(ctx); err != nil {
		return fmt.Errorf("error deleting %d definitions: %w", len(ids), err)
	}
	return nil
}
