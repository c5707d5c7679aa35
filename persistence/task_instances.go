package persistence

import (
	"context"
	"fmt"
)

// TaskInstanceInsertMany inserts task instances in one statement and sets their IDs.
func (s *Store) TaskInstanceInsertMany(ctx context.Context, tis []*TaskInstance) error {
	return insertMany(ctx, s, tis, "task instances", s.dialect.insertTaskInstances)
}

// TaskInstanceGetMany returns the task instances with the given IDs, in ID order.
func (s *Store) TaskInstanceGetMany(ctx context.Context, ids []int64) ([]*TaskInstance, error) {
	return getByIDs[TaskInstance](ctx, s, ids, "task instances")
}

// TaskInstanceListParams is the input of TaskInstanceList.
type TaskInstanceListParams struct {
	WorkflowIDs []int64
	Page        PageParams
}

// TaskInstanceList returns the task instances of workflows in ID order, Limit per workflow.
func (s *Store) TaskInstanceList(ctx context.Context, p TaskInstanceListParams) ([]*TaskInstance, error) {
	var out []*TaskInstance
	if err := s.perWorkflowPage(ctx, &out, "task_instances", p.WorkflowIDs, p.Page); err != nil {
		return nil, fmt.Errorf("error listing task instances: %w", err)
	}
	return out, nil
}
