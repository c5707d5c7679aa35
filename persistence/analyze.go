package persistence

import (
	"context"
	"fmt"
)

// Analyze refreshes the planner's statistics of every table (what autovacuum does in the
// background on PostgreSQL), so that what is measured next runs with the plans a settled database
// gets.
func (s *Store) Analyze(ctx context.Context) error {
	if err := s.dialect.analyze(ctx, s); err != nil {
		return fmt.Errorf("error analyzing the database: %w", err)
	}
	return nil
}
