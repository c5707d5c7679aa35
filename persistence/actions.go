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
	return insertMany(ctx, s, actions, "actions", s.dialect.insertActions)
}

// ActionGetMany returns the actions with the given IDs, in ID order.
func (s *Store) ActionGetMany(ctx context.Context, ids []int64) ([]*Action, error) {
	return getByIDs[Action](ctx, s, ids, "actions")
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

// ActionVariableInsertMany records the variables actions set, in one statement.
func (s *Store) ActionVariableInsertMany(ctx context.Context, vars []*ActionVariable) error {
	return insertMany(ctx, s, vars, "action variables", s.dialect.insertActionVariables)
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
