package persistence

import (
	"context"
	"fmt"
)

// ActionGetMany returns the actions with the given IDs, in ID order.
func (s *Store) ActionGetMany(ctx context.Context, ids []int64) ([]*Action, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var out []*Action
	if err := s.idb.NewSelect().Model(&out).Where("id IN (?)", bunIn(ids)).OrderExpr("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("error loading %d actions: %w", len(ids), err)
	}
	return out, nil
}

// DefinitionGetByIDs returns the definition versions with the given row IDs, in ID order.
func (s *Store) DefinitionGetByIDs(ctx context.Context, ids []int64) ([]*Definition, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var out []*Definition
	if err := s.idb.NewSelect().Model(&out).Where("id IN (?)", bunIn(ids)).OrderExpr("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("error loading %d definitions: %w", len(ids), err)
	}
	return out, nil
}

// SideEffectGetMany returns the side effects with the given IDs, in ID order.
func (s *Store) SideEffectGetMany(ctx context.Context, ids []int64) ([]*SideEffect, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var out []*SideEffect
	if err := s.idb.NewSelect().Model(&out).Where("id IN (?)", bunIn(ids)).OrderExpr("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("error loading %d side effects: %w", len(ids), err)
	}
	return out, nil
}
