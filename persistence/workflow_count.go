package persistence

import (
	"context"
	"fmt"
)

// DefaultExactCountUpTo is how many workflows WorkflowCountUpTo and WorkflowStatsUpTo count
// exactly before they fall back on the planner's estimate.
const DefaultExactCountUpTo = 10000

// minCountCost is the planner cost (PostgreSQL's units: about one per page read) under which a
// capped count always runs; above max(it, the limit) the count is the planner's estimate.
const minCountCost = 1000

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
	return s.countUpTo(ctx, f, exactUpTo, !f.empty())
}

// countUpTo counts the filter's rows up to limit, then estimates. where, when set, is one more
// condition (taking no argument or one, arg) that lets an index serve the count. plan asks the
// planner first whether the count would read much more than limit rows (see minCountCost).
func (s *Store) countUpTo(ctx context.Context, f WorkflowFilter, limit int, plan bool, where ...any) (Count, error) {
	rows := f.apply(s.idb.NewSelect().Model((*Workflow)(nil)).ColumnExpr("1"))
	if len(where) > 0 {
		rows = rows.Where(where[0].(string), where[1:]...)
	}
	capped := s.idb.NewSelect().ColumnExpr("COUNT(*)").TableExpr("(?) AS capped", rows.Limit(int64(limit+1)))
	// A filter no index serves that matches few workflows reads the whole table before it finds
	// limit+1 of them: where the planner says so, its estimate answers instead.
	cost, ok := 0.0, false
	if plan {
		var err error
		if cost, ok, err = s.dialect.planCost(ctx, s, capped.String()); err != nil {
			return Count{}, fmt.Errorf("error planning a workflow count: %w", err)
		}
	}
	if ok && cost > float64(max(limit, minCountCost)) {
		est, ok, err := s.estimate(ctx, f)
		if err != nil {
			return Count{}, err
		}
		if ok {
			if est < 2 {
				est = 0 // the planner's floor: its statistics saw none
			}
			return Count{N: est, Estimate: true}, nil
		}
	}
	var n int
	if err := capped.Scan(ctx, &n); err != nil {
		return Count{}, fmt.Errorf("error counting workflows: %w", err)
	}
	if n <= limit {
		return Count{N: n}, nil
	}
	est, ok, err := s.estimate(ctx, f)
	if err != nil {
		return Count{}, err
	}
	if !ok {
		n, err := s.WorkflowCount(ctx, f)
		return Count{N: n}, err
	}
	return Count{N: max(est, limit+1), Estimate: true}, nil
}

// estimate returns the planner's estimate of the workflows a filter selects, or false where the
// database has none.
func (s *Store) estimate(ctx context.Context, f WorkflowFilter) (int, bool, error) {
	est, ok, err := s.dialect.estimateRows(ctx, s, f.apply(s.idb.NewSelect().Model((*Workflow)(nil)).ColumnExpr("1")).String())
	if err != nil {
		return 0, false, fmt.Errorf("error estimating workflows: %w", err)
	}
	return est, ok, nil
}

// WorkflowStatCounts are the workflows a filter selects, counted as WorkflowCountUpTo counts.
type WorkflowStatCounts struct {
	Total    Count
	ByStatus map[Status]Count
}

// WorkflowStatsUpTo counts the workflows a filter selects in all and per status. When they number
// at most exactUpTo, one exact GROUP BY counts them. Above, each status an index serves (those
// that need attention: MANUAL, FAILED, PAUSED, WAITING, CANCELLED) is counted up to exactUpTo on
// its own and estimated beyond; the statuses every step passes through, which no index holds so
// that steps stay cheap, are the planner's estimate (left out below 2, the planner's floor when its
// statistics saw none of a status). The cost is bounded by about five times
// exactUpTo index entries however many workflows are stored. MariaDB/MySQL estimate a condition
// no index serves no better than the table's size, so there those statuses are grouped exactly
// in one statement: a scan of the workflows the filter selects, as before.
func (s *Store) WorkflowStatsUpTo(ctx context.Context, f WorkflowFilter, exactUpTo int) (WorkflowStatCounts, error) {
	out := WorkflowStatCounts{ByStatus: map[Status]Count{}}
	total, err := s.WorkflowCountUpTo(ctx, f, exactUpTo)
	if err != nil {
		return out, err
	}
	out.Total = total
	if !total.Estimate {
		return out, s.addExactStats(ctx, f, out.ByStatus)
	}
	var unindexed []Status
	for _, st := range statuses {
		if len(f.Statuses) > 0 && !containsStatus(f.Statuses, st) {
			continue
		}
		g := f
		g.Statuses = []Status{st}
		var c Count
		if where, arg, ok := s.dialect.statusIndexed(st); ok {
			// With no other condition the index serves the count, which stops after limit+1.
			if c, err = s.countUpTo(ctx, g, exactUpTo, !f.empty(), where, arg); err != nil {
				return out, err
			}
		} else if !s.Capabilities().Estimates {
			unindexed = append(unindexed, st)
			continue
		} else {
			est, ok, err := s.estimate(ctx, g)
			if err != nil {
				return out, err
			}
			// An estimate below 2 is the planner's floor: its statistics saw none of the status.
			if est < 2 {
				est = 0
			}
			if c = (Count{N: est, Estimate: true}); !ok {
				if c, err = s.countUpTo(ctx, g, exactUpTo, true); err != nil {
					return out, err
				}
			}
		}
		if c.N > 0 {
			out.ByStatus[st] = c
		}
	}
	if len(unindexed) > 0 {
		// Without estimates, the statuses no index holds are grouped exactly in one statement:
		// one scan, however many of them.
		g := f
		g.Statuses = unindexed
		return out, s.addExactStats(ctx, g, out.ByStatus)
	}
	return out, nil
}

// addExactStats adds the exact counts per status of the workflows a filter matches (one GROUP BY).
func (s *Store) addExactStats(ctx context.Context, f WorkflowFilter, byStatus map[Status]Count) error {
	rows, err := s.WorkflowStats(ctx, f)
	if err != nil {
		return err
	}
	for _, r := range rows {
		c := byStatus[r.Status]
		c.N += r.Count
		byStatus[r.Status] = c
	}
	return nil
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

// attentionStatuses are the statuses the workflows_attention_idx index holds.
var attentionStatuses = []Status{StatusManual, StatusFailed, StatusPaused, StatusWaiting, StatusCancelled}

// empty reports whether the filter selects every workflow.
func (f WorkflowFilter) empty() bool {
	return f.IDs == nil && f.Types == nil && f.Statuses == nil && f.States == nil && f.ExternalID == nil &&
		f.BusinessKey == nil && f.ParentID == nil && f.RootID == nil && f.TopLevel == nil && f.ExecutorGroup == nil &&
		f.ExecutorIDs == nil && f.CreatedAfter == nil && f.CreatedBefore == nil && f.Attributes == nil && f.Stuck == nil
}

// Empty reports whether the filter selects every workflow: it sets no condition (an empty list
// sets none either).
func (f WorkflowFilter) Empty() bool {
	return len(f.IDs) == 0 && len(f.Types) == 0 && len(f.Statuses) == 0 && len(f.States) == 0 && f.ExternalID == nil &&
		f.BusinessKey == nil && f.ParentID == nil && f.RootID == nil && f.TopLevel == nil && f.ExecutorGroup == nil &&
		len(f.ExecutorIDs) == 0 && f.CreatedAfter == nil && f.CreatedBefore == nil
}
