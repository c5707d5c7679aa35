package persistence

import (
	"context"
	"fmt"
	"strings"
)

// ExecutorTypesSet records the definition types an executor's pool claims (written when they
// change, not on every claim).
func (s *Store) ExecutorTypesSet(ctx context.Context, id int64, types []string) error {
	joined := strings.Join(types, ",")
	if _, err := s.idb.NewUpdate().Model((*Executor)(nil)).Set("types = ?", joined).Where("id = ?", id).Exec(ctx); err != nil {
		return fmt.Errorf("error recording the types of executor %d: %w", id, err)
	}
	return nil
}

// TypeList returns the types the executor's pool claims, and false when none were recorded.
func (e *Executor) TypeList() ([]string, bool) {
	if e.Types == nil {
		return nil, false
	}
	if *e.Types == "" {
		return []string{}, true
	}
	return strings.Split(*e.Types, ","), true
}
