package persistence

import (
	"context"
	"fmt"
)

// ActivityLogInsertMany inserts activity logs in one statement.
func (s *Store) ActivityLogInsertMany(ctx context.Context, logs []*ActivityLog) error {
	return insertMany(ctx, s, logs, "activity logs", s.dialect.insertActivityLogs)
}

// ActivityLogListParams is the input of ActivityLogList.
type ActivityLogListParams struct {
	WorkflowIDs     []int64
	TaskInstanceIDs []int64
}

// ActivityLogList returns the activity logs of workflows or of task instances, in ID order.
func (s *Store) ActivityLogList(ctx context.Context, p ActivityLogListParams) ([]*ActivityLog, error) {
	var logs []*ActivityLog
	q := s.idb.NewSelect().Model(&logs).OrderExpr("id")
	switch {
	case len(p.TaskInstanceIDs) > 0:
		q = q.Where("task_instance_id IN (?)", bunIn(p.TaskInstanceIDs))
	case len(p.WorkflowIDs) > 0:
		q = q.Where("workflow_id IN (?)", bunIn(p.WorkflowIDs))
	default:
		return nil, nil
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("error listing activity logs: %w", err)
	}
	return logs, nil
}
