package persistence

import (
	"context"
	"fmt"
)

// DefaultExactCountUpTo is how many workflows WorkflowCountUpTo and WorkflowStatsUpTo count
// exactly before they fall back on the planner's estimate.
const DefaultExactCountUpTo = 10000

// statuses are the workflow statuses in the order counts list them.
var statuses = []Status{StatusCreated, StatusInProgress, StatusExecuting, StatusWaiting, StatusPaused,
	StatusManual, StatusFinished, StatusFailed, StatusCancelled}

// Count is a number of workflows, exact or estimated.
type Count struct {
	N int
	// Estimate is set when N is the database planner's estimate rather than a count: the exact
	// count passed the limit the caller could afford to count.
	Estimate bool
}

// WorkflowCountUpTo counts the workflows a filter selects, reading at most exactUpTo+1 of them:
// up to exactUpTo the count is exact; above it, it is the planner's estimate of the filter's rows
// (PostgreSQL and MariaDB/MySQL EXPLAIN), never less than exactUpTo+1, and flagged as one. SQLite
// has no row estimate to offer and counts in full above exactUpTo. exactUpTo <= 0 counts in full everywhere.
func (s *Store) WorkflowCountUpTo(ctx context.Context, f WorkflowFilter, exactUpTo int) (Count, error) {
	if exactUpTo <= 0 {
		n, err := s.WorkflowCount(ctx, f)
		return Count{N: n}, err
	}
	return s.countUpTo(ctx, f, exactUpTo)
}

// countUpTo counts the filter's rows up to limit, then estimates.
func (s *Store) countUpTo(ctx context.Context, f WorkflowFilter, limit int) (Count, error) {
	rows := f.apply(s.idb.NewSelect().Model((*Workflow)(nil)).ColumnExpr("1"))
	var n int
	if err := s.idb.NewSelect().ColumnExpr("COUNT(*)").TableExpr("(?) AS capped", rows.Limit(int64(limit+1))).Scan(ctx, &n); err != nil {
		return Count{}, fmt.Errorf("error counting workflows: %w", err)
	}
	if n <= limit {
		return Count{N: n}, nil
	}
	est, ok, err := s.dialect.estimateRows(ctx, s, f.apply(s.idb.NewSelect().Model((*Workflow)(nil)).ColumnExpr("1")).String())
	if err != nil {
		return Count{}, fmt.Errorf("error estimating workflows: %w", err)
	}
	if !ok {
		n, err := s.WorkflowCount(ctx, f)
		return Count{N: n}, err
	}
	return Count{N: max(est, limit+1), Estimate: true}, nil
}

// WorkflowStatCounts are the workflows a filter selects, counted as WorkflowCountUpTo counts.
type WorkflowStatCounts struct {
	Total    Count
	ByStatus map[Status]Count
}

// WorkflowStatsUpTo counts the workflows a filter selects in all and per status. When they number
// at most exactUpTo, one exact GROUP BY counts them. Above, each status is counted up to
// exactUpTo on its own (the (status, id) index serves it) and estimated beyond, so the cost is
// bounded by about ten times exactUpTo index entries however many workflows are stored.
func (s *Store) WorkflowStatsUpTo(ctx context.Context, f WorkflowFilter, exactUpTo int) (WorkflowStatCounts, error) {
	out := WorkflowStatCounts{ByStatus: map[Status]Count{}}
	total, err := s.WorkflowCountUpTo(ctx, f, exactUpTo)
	if err != nil {
		return out, err
	}
	out.Total = total
	if !total.Estimate {
		rows, err := s.WorkflowStats(ctx, f)
		if err != nil {
			return out, err
		}
		for _, r := range rows {
			c := out.ByStatus[r.Status]
			c.N += r.Count
			out.ByStatus[r.Status] = c
		}
		return out, nil
	}
	for _, st := range statuses {
		if len(f.Statuses) > 0 && !containsStatus(f.Statuses, st) {
			continue
		}
		g := f
		g.Statuses = []Status{st}
		c, err := s.countUpTo(ctx, g, exactUpTo)
		if err != nil {
			return out, err
		}
		if c.N > 0 {
			out.ByStatus[st] = c
		}
	}
	return out, nil
}

func containsStatus(list []Status, st Status) bool {
	for _, s := range list {
		if s == st {
			return true
		}
	}
	return false
}

// TypeStatCounts are the counts of one type's workflows.
type TypeStatCounts struct {
	Type string
	WorkflowStatCounts
}

// WorkflowStatsByTypeUpTo counts the workflows a filter selects per type, in all and per status,
// as WorkflowStatsUpTo does. Above exactUpTo it counts each type on its own: the types the filter
// names, or else every type a definition was stored for.
func (s *Store) WorkflowStatsByTypeUpTo(ctx context.Context, f WorkflowFilter, exactUpTo int) ([]TypeStatCounts, error) {
	total, err := s.WorkflowCountUpTo(ctx, f, exactUpTo)
	if err != nil {
		return nil, err
	}
	var out []TypeStatCounts
	if !total.Estimate {
		rows, err := s.WorkflowStats(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if len(out) == 0 || out[len(out)-1].Type != r.Type {
				out = append(out, TypeStatCounts{Type: r.Type, WorkflowStatCounts: WorkflowStatCounts{ByStatus: map[Status]Count{}}})
			}
			t := &out[len(out)-1]
			t.Total.N += r.Count
			t.ByStatus[r.Status] = Count{N: r.Count}
		}
		return out, nil
	}
	types := f.Types
	if len(types) == 0 {
		if err := s.idb.NewSelect().Model((*Definition)(nil)).ColumnExpr("DISTINCT d.type").
			OrderExpr("d.type").Scan(ctx, &types); err != nil {
			return nil, fmt.Errorf("error listing the workflow types: %w", err)
		}
	}
	for _, typ := range types {
		g := f
		g.Types = []string{typ}
		c, err := s.WorkflowStatsUpTo(ctx, g, exactUpTo)
		if err != nil {
			return nil, err
		}
		if c.Total.N > 0 {
			out = append(out, TypeStatCounts{Type: typ, WorkflowStatCounts: c})
		}
	}
	return out, nil
}
