package persistence

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cairnflow/cairn/internal/batch"
)

// SideEffectRecordParams is the input of SideEffectRecord.
type SideEffectRecordParams struct {
	WorkflowID int64
	Key        string
	ValueType  string
	Value      json.RawMessage
}

// sideEffectKey names one side effect.
type sideEffectKey struct {
	WorkflowID int64
	Key        string
}

// SideEffectRecord stores a side effect unless one with the same key is stored already, and returns
// the stored one: the first value recorded for a key wins, whoever recorded it. Concurrent calls
// are written together, one statement and one commit for many steps.
func (s *Store) SideEffectRecord(ctx context.Context, p SideEffectRecordParams) (*SideEffect, error) {
	if s.InTx() || s.sideEffects == nil {
		out, err := s.sideEffectRecordMany(ctx, []SideEffectRecordParams{p})
		if err != nil {
			return nil, err
		}
		return out[0], nil
	}
	return s.sideEffects.record.Do(ctx, p)
}

// SideEffectGet returns the side effect a workflow recorded under a key (ErrNotFound: none yet).
// Concurrent calls are read together in one statement.
func (s *Store) SideEffectGet(ctx context.Context, workflowID int64, key string) (*SideEffect, error) {
	k := sideEffectKey{WorkflowID: workflowID, Key: key}
	var se *SideEffect
	if s.InTx() || s.sideEffects == nil {
		found, err := s.sideEffectGetMany(ctx, []sideEffectKey{k})
		if err != nil {
			return nil, err
		}
		se = found[0]
	} else {
		var err error
		if se, err = s.sideEffects.get.Do(ctx, k); err != nil {
			return nil, err
		}
	}
	if se == nil {
		return nil, notFound("side effect", key)
	}
	return se, nil
}

// SideEffectGetMany returns the side effects with the given IDs, in ID order.
func (s *Store) SideEffectGetMany(ctx context.Context, ids []int64) ([]*SideEffect, error) {
	return getByIDs[SideEffect](ctx, s, ids, "side effects")
}

// SideEffectList returns the side effects of workflows in ID order.
func (s *Store) SideEffectList(ctx context.Context, workflowIDs []int64) ([]*SideEffect, error) {
	if len(workflowIDs) == 0 {
		return nil, nil
	}
	var out []*SideEffect
	if err := s.idb.NewSelect().Model(&out).Where("workflow_id IN (?)", bunIn(workflowIDs)).OrderExpr("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("error listing side effects: %w", err)
	}
	return out, nil
}

// sideEffectBatches groups the side-effect statements of concurrently running steps.
type sideEffectBatches struct {
	get    batch.Group[sideEffectKey, *SideEffect]
	record batch.Group[SideEffectRecordParams, *SideEffect]
}

func newSideEffectBatches(s *Store, leaders int) *sideEffectBatches {
	return &sideEffectBatches{
		get:    batch.Group[sideEffectKey, *SideEffect]{Leaders: leaders, MaxBatch: 500, Run: batch.Whole(s.sideEffectGetMany)},
		record: batch.Group[SideEffectRecordParams, *SideEffect]{Leaders: leaders, MaxBatch: 500, Run: batch.Whole(s.sideEffectRecordMany)},
	}
}

// sideEffectGetMany reads side effects by key; a key with none gives nil at its index.
func (s *Store) sideEffectGetMany(ctx context.Context, keys []sideEffectKey) ([]*SideEffect, error) {
	ids := make([]int64, 0, len(keys))
	for _, k := range keys {
		ids = append(ids, k.WorkflowID)
	}
	var found []*SideEffect
	if err := s.idb.NewSelect().Model(&found).Where("workflow_id IN (?)", bunIn(ids)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("error reading %d side effects: %w", len(keys), err)
	}
	byKey := make(map[sideEffectKey]*SideEffect, len(found))
	for _, se := range found {
		byKey[sideEffectKey{se.WorkflowID, se.Key}] = se
	}
	out := make([]*SideEffect, len(keys))
	for i, k := range keys {
		out[i] = byKey[k]
	}
	return out, nil
}

// sideEffectRecordMany inserts side effects in one transaction (one statement, one commit), keeping
// any already stored for a key, and returns the stored one for each input.
func (s *Store) sideEffectRecordMany(ctx context.Context, ps []SideEffectRecordParams) ([]*SideEffect, error) {
	now := Now()
	rows := make([]*SideEffect, 0, len(ps))
	seen := map[sideEffectKey]bool{}
	for _, p := range ps {
		k := sideEffectKey{p.WorkflowID, p.Key}
		if seen[k] {
			continue // two runs of one step in one batch: the first wins
		}
		seen[k] = true
		rows = append(rows, &SideEffect{WorkflowID: p.WorkflowID, Key: p.Key, ValueType: p.ValueType, Value: p.Value, Created: now})
	}
	out := make([]*SideEffect, len(ps))
	err := s.Tx(ctx, func(ctx context.Context, tx *Store) error {
		if _, err := tx.dialect.insertSkippingDuplicates(ctx, tx, &rows, "workflow_id, key", false); err != nil {
			return err
		}
		// Every key is read back: the rows just inserted, and those another run recorded first
		// (usually none), whose values win.
		keys := make([]sideEffectKey, len(ps))
		for i, p := range ps {
			keys[i] = sideEffectKey{p.WorkflowID, p.Key}
		}
		found, err := tx.sideEffectGetMany(ctx, keys)
		if err != nil {
			return err
		}
		byKey := make(map[sideEffectKey]*SideEffect, len(found))
		for _, se := range found {
			if se != nil {
				byKey[sideEffectKey{se.WorkflowID, se.Key}] = se
			}
		}
		for i, p := range ps {
			out[i] = byKey[sideEffectKey{p.WorkflowID, p.Key}]
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("error recording %d side effects: %w", len(ps), err)
	}
	for i, se := range out {
		if se == nil {
			return nil, fmt.Errorf("error recording side effect %q of workflow %d: not stored", ps[i].Key, ps[i].WorkflowID)
		}
	}
	return out, nil
}
