package persistence

import (
	"context"
	"encoding/json"
	"fmt"
)

// ActionInsertMany inserts actions in one statement and sets their IDs.
func (s *Store) ActionInsertMany(ctx context.Context, actions []*Action) error {
	if len(actions) == 0 {
		return nil
	}
	for _, a := range actions {
		if a.At.IsZero() {
			a.At = Now()
		}
	}
	return insertMany(ctx, s, actions, "actions", true)
}

// ActionVariableInsertMany records the variables actions set, in one statement.
func (s *Store) ActionVariableInsertMany(ctx context.Context, vars []*ActionVariable) error {
	return insertMany(ctx, s, vars, "action variables", false)
}

// PageParams selects a page of a workflow's children rows by ID: after (exclusive) or before
// (exclusive), Limit rows, oldest first unless Desc.
type PageParams struct {
	After  int64
	Before int64
	Limit  int
	Desc   bool
}

// ActionListParams is the input of ActionList.
type ActionListParams struct {
	WorkflowIDs []int64
	Page        PageParams
}

// ActionList returns the actions of workflows in ID order. With several workflows and a Limit, the
// limit applies to each workflow (one statement for a whole page of workflows: the dataloader path).
func (s *Store) ActionList(ctx context.Context, p ActionListParams) ([]*Action, error) {
	var out []*Action
	if err := s.perWorkflowPage(ctx, &out, "actions", p.WorkflowIDs, p.Page); err != nil {
		return nil, fmt.Errorf("error listing actions: %w", err)
	}
	return out, nil
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

// perWorkflowPage selects rows of table for several workflows, at most Limit per workflow after or
// before an ID, with a window function so a whole page of workflows costs one statement.
func (s *Store) perWorkflowPage(ctx context.Context, dest any, table string, ids []int64, p PageParams) error {
	if len(ids) == 0 {
		return nil
	}
	dir := "ASC"
	if p.Desc {
		dir = "DESC"
	}
	where := "workflow_id IN (?)"
	args := []any{bunIn(ids)}
	if p.After > 0 {
		if p.Desc {
			where += " AND id < ?"
		} else {
			where += " AND id > ?"
		}
		args = append(args, p.After)
	}
	if p.Before > 0 {
		if p.Desc {
			where += " AND id > ?"
		} else {
			where += " AND id < ?"
		}
		args = append(args, p.Before)
	}
	var sql string
	if p.Limit > 0 && len(ids) > 1 {
		sql = fmt.Sprintf(`SELECT * FROM (SELECT t.*, ROW_NUMBER() OVER (PARTITION BY workflow_id ORDER BY id %[2]s) AS rn
			FROM %[1]s AS t WHERE %[3]s) AS ranked WHERE rn <= ? ORDER BY workflow_id, id %[2]s`, table, dir, where)
		args = append(args, p.Limit)
	} else {
		sql = fmt.Sprintf("SELECT * FROM %s WHERE %s ORDER BY id %s", table, where, dir)
		if p.Limit > 0 {
			sql += " LIMIT ?"
			args = append(args, p.Limit)
		}
	}
	return s.idb.NewRaw(sql, args...).Scan(ctx, dest)
}

// CountByWorkflow counts rows of a child table (actions, task_instances, activity_logs, signals)
// per workflow, in one statement.
func (s *Store) CountByWorkflow(ctx context.Context, table string, ids []int64) (map[int64]int, error) {
	switch table {
	case "actions", "task_instances", "activity_logs", "signals", "side_effects":
	default:
		return nil, fmt.Errorf("error counting: unknown table %q", table)
	}
	out := make(map[int64]int, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []struct {
		WorkflowID int64 `bun:"workflow_id"`
		N          int   `bun:"n"`
	}
	if err := s.idb.NewRaw(fmt.Sprintf("SELECT workflow_id, COUNT(*) AS n FROM %s WHERE workflow_id IN (?) GROUP BY workflow_id", table),
		bunIn(ids)).Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("error counting %s: %w", table, err)
	}
	for _, r := range rows {
		out[r.WorkflowID] = r.N
	}
	return out, nil
}

// ActionVariableList returns the variables set by the given actions.
func (s *Store) ActionVariableList(ctx context.Context, actionIDs []int64) ([]*ActionVariable, error) {
	if len(actionIDs) == 0 {
		return nil, nil
	}
	var vars []*ActionVariable
	if err := s.idb.NewSelect().Model(&vars).Where("action_id IN (?)", bunIn(actionIDs)).
		OrderExpr("av.action_id, av.key").Scan(ctx); err != nil {
		return nil, fmt.Errorf("error listing action variables: %w", err)
	}
	return vars, nil
}

// VariablesAsOf rebuilds a workflow's variables as they stood right after an action: for each key,
// the value set by the latest action up to it (a key whose latest value is null was removed).
func (s *Store) VariablesAsOf(ctx context.Context, workflowID, actionID int64) (map[string]json.RawMessage, error) {
	var vars []*ActionVariable
	if err := s.idb.NewSelect().Model(&vars).
		Where("workflow_id = ? AND action_id <= ?", workflowID, actionID).
		OrderExpr("action_id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("error rebuilding the variables of workflow %d: %w", workflowID, err)
	}
	out := map[string]json.RawMessage{}
	for _, v := range vars {
		if len(v.Value) == 0 || string(v.Value) == "null" {
			delete(out, v.Key)
			continue
		}
		out[v.Key] = v.Value
	}
	return out, nil
}

// TaskInstanceInsertMany inserts task instances in one statement and sets their IDs.
func (s *Store) TaskInstanceInsertMany(ctx context.Context, tis []*TaskInstance) error {
	return insertMany(ctx, s, tis, "task instances", true)
}

// TaskInstanceGetMany returns the task instances with the given IDs.
func (s *Store) TaskInstanceGetMany(ctx context.Context, ids []int64) ([]*TaskInstance, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var tis []*TaskInstance
	if err := s.idb.NewSelect().Model(&tis).Where("id IN (?)", bunIn(ids)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("error loading task instances: %w", err)
	}
	return tis, nil
}

// ActivityLogInsertMany inserts activity logs in one statement.
func (s *Store) ActivityLogInsertMany(ctx context.Context, logs []*ActivityLog) error {
	return insertMany(ctx, s, logs, "activity logs", true)
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
	return s.sideEffects.record.do(ctx, p)
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
		if se, err = s.sideEffects.get.do(ctx, k); err != nil {
			return nil, err
		}
	}
	if se == nil {
		return nil, notFound("side effect", key)
	}
	return se, nil
}

// sideEffectBatches groups the side-effect statements of concurrently running steps.
type sideEffectBatches struct {
	get    groupCommit[sideEffectKey, *SideEffect]
	record groupCommit[SideEffectRecordParams, *SideEffect]
}

func newSideEffectBatches(s *Store, leaders int) *sideEffectBatches {
	return &sideEffectBatches{
		get:    groupCommit[sideEffectKey, *SideEffect]{max: leaders, maxBatch: 500, run: s.sideEffectGetMany},
		record: groupCommit[SideEffectRecordParams, *SideEffect]{max: leaders, maxBatch: 500, run: s.sideEffectRecordMany},
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
