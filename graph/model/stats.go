package model

import "context"

// WorkflowStats are the workflow counts of a filter: the total and per status, counted when the
// query runs; per type only when a client asks (ByTypes).
type WorkflowStats struct {
	Total           int
	TotalIsEstimate bool
	ByStatus        []*StatusCount
	// ByTypes counts per type.
	ByTypes func(ctx context.Context) ([]*TypeCount, error)
	// StuckCount counts the stuck ones.
	StuckCount func(ctx context.Context) (int, error)
}

// ByType counts the workflows per type.
func (s *WorkflowStats) ByType(ctx context.Context) ([]*TypeCount, error) { return s.ByTypes(ctx) }
