package persistence

import (
	"context"
	"fmt"
)

// PageParams selects a page of a workflow's children rows by ID: after (exclusive) or before
// (exclusive), Limit rows, oldest first unless Desc.
type PageParams struct {
	After  int64
	Before int64
	Limit  int
	Desc   bool
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
