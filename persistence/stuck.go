package persistence

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// StuckRules decide which workflows are stuck at one instant, from what serves them then: the
// types the live executors claim per executor group, and the functions live remote workers poll.
// The SQL filter (WorkflowFilter.Stuck) and Reason apply the same rules, in this order:
//
//  1. due (claimable, next activation passed, held by no executor) and no live executor of its
//     group claims its type;
//  2. due for longer than DueFor;
//  3. EXECUTING with a step deadline more than PastDeadline ago;
//  4. WAITING for a pending remote task whose function no live worker polls.
type StuckRules struct {
	Now time.Time
	// Served lists, per executor group with a live executor, the types claimed there; a group
	// whose executor recorded no types yet (All) counts as serving every type.
	Served []ServedGroup
	// Functions are the functions live remote workers poll.
	Functions    []string
	DueFor       time.Duration
	PastDeadline time.Duration
	// WorkerWithin is how recently a remote worker must have polled to count as live (for the
	// reason's text).
	WorkerWithin time.Duration
}

// ServedGroup is what the live executors of one group claim.
type ServedGroup struct {
	Group string
	All   bool
	Types []string
}

// StuckRulesParams are the thresholds of StuckRulesAt.
type StuckRulesParams struct {
	Now          time.Time
	DueFor       time.Duration
	PastDeadline time.Duration
	WorkerWithin time.Duration
}

// StuckRulesAt reads what serves workflows now (two small reads: live executors, live workers).
func (s *Store) StuckRulesAt(ctx context.Context, p StuckRulesParams) (*StuckRules, error) {
	now := UTC(p.Now).Truncate(time.Microsecond) // as the databases store times
	var execs []*Executor
	if err := s.idb.NewSelect().Model(&execs).Column("executor_group", "types").
		Where("e.stopped IS NULL AND e.expires > ?", now).Scan(ctx); err != nil {
		return nil, fmt.Errorf("error reading the live executors: %w", err)
	}
	groups := map[string]*ServedGroup{}
	for _, e := range execs {
		g := groups[e.ExecutorGroup]
		if g == nil {
			g = &ServedGroup{Group: e.ExecutorGroup}
			groups[e.ExecutorGroup] = g
		}
		if types, ok := e.TypeList(); ok {
			g.Types = append(g.Types, types...)
		} else {
			g.All = true
		}
	}
	r := &StuckRules{Now: now, DueFor: p.DueFor, PastDeadline: p.PastDeadline, WorkerWithin: p.WorkerWithin}
	for _, g := range groups {
		slices.Sort(g.Types)
		g.Types = slices.Compact(g.Types)
		r.Served = append(r.Served, *g)
	}
	sort.Slice(r.Served, func(i, j int) bool { return r.Served[i].Group < r.Served[j].Group })
	var workers []*RemoteWorker
	if err := s.idb.NewSelect().Model(&workers).Column("functions").
		Where("rw.last_poll >= ?", now.Add(-p.WorkerWithin)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("error reading the live remote workers: %w", err)
	}
	for _, w := range workers {
		for _, f := range strings.Split(w.Functions, ",") {
			if f != "" {
				r.Functions = append(r.Functions, f)
			}
		}
	}
	slices.Sort(r.Functions)
	r.Functions = slices.Compact(r.Functions)
	return r, nil
}

// serves reports whether a live executor claims a type in a group.
func (r *StuckRules) serves(group, typ string) bool {
	for _, g := range r.Served {
		if g.Group == group {
			return g.All || slices.Contains(g.Types, typ)
		}
	}
	return false
}

// due reports whether a workflow is due and held by no executor (what a claim takes).
func (r *StuckRules) due(w *Workflow) bool {
	return slices.Contains(claimableStatuses, w.Status) && w.NextActivation != nil && !w.NextActivation.After(r.Now) &&
		w.ExecutorID == nil
}

// Reason returns why a workflow is stuck, or "" when it is not; pending are the functions of its
// pending remote tasks (PendingRemoteFunctions).
func (r *StuckRules) Reason(w *Workflow, pending []string) string {
	if r.due(w) {
		if !r.serves(w.ExecutorGroup, w.Type) {
			return fmt.Sprintf("no live executor serves type %q in executor group %q", w.Type, w.ExecutorGroup)
		}
		if late := r.Now.Sub(*w.NextActivation); late > r.DueFor {
			return fmt.Sprintf("due for %s but not claimed: the nodes are behind", late.Round(time.Second))
		}
	}
	if w.Status == StatusExecuting && w.StepDeadline != nil && w.StepDeadline.Before(r.Now.Add(-r.PastDeadline)) {
		return fmt.Sprintf("its attempt has run %s past its deadline", r.Now.Sub(*w.StepDeadline).Round(time.Second))
	}
	if w.Status == StatusWaiting {
		for _, f := range pending {
			if !slices.Contains(r.Functions, f) {
				return fmt.Sprintf("no remote worker polled function %q in the last %s", f, r.WorkerWithin)
			}
		}
	}
	return ""
}

// apply adds the rules to a query on workflows (alias w): stuck workflows when want, else the
// others.
func (r *StuckRules) apply(q *bun.SelectQuery, want bool) *bun.SelectQuery {
	var served []string
	var args []any
	for _, g := range r.Served {
		if g.All {
			served = append(served, "w.executor_group = ?")
			args = append(args, g.Group)
		} else if len(g.Types) > 0 {
			served = append(served, "(w.executor_group = ? AND w.type IN (?))")
			args = append(args, g.Group, bun.List(g.Types))
		}
	}
	notServed := "1 = 1"
	if len(served) > 0 {
		notServed = "NOT (" + strings.Join(served, " OR ") + ")"
	}
	due := "w.status IN (?) AND w.next_activation IS NOT NULL AND w.next_activation <= ? AND w.executor_id IS NULL"
	cond := "((" + due + " AND (" + notServed + " OR w.next_activation < ?))" +
		" OR (w.status = ? AND w.step_deadline IS NOT NULL AND w.step_deadline < ?)" +
		" OR (w.status = ? AND EXISTS (SELECT 1 FROM remote_tasks AS t WHERE t.workflow_id = w.id AND t.consumed IS NULL AND t.status = ?"
	all := append([]any{bun.List(claimableStatuses), r.Now}, args...)
	all = append(all, r.Now.Add(-r.DueFor), StatusExecuting, r.Now.Add(-r.PastDeadline), StatusWaiting, RemoteTaskPending)
	if len(r.Functions) > 0 {
		cond += " AND t.function NOT IN (?)"
		all = append(all, bun.List(r.Functions))
	}
	cond += ")))"
	if !want {
		cond = "NOT " + cond
	}
	return q.Where(cond, all...)
}

// PendingRemoteFunctions returns, per workflow, the functions of its pending remote tasks.
func (s *Store) PendingRemoteFunctions(ctx context.Context, workflowIDs []int64) (map[int64][]string, error) {
	out := map[int64][]string{}
	if len(workflowIDs) == 0 {
		return out, nil
	}
	var rows []struct {
		WorkflowID int64  `bun:"workflow_id"`
		Function   string `bun:"function"`
	}
	if err := s.idb.NewSelect().Table("remote_tasks").Column("workflow_id", "function").
		Where("workflow_id IN (?) AND consumed IS NULL AND status = ?", bunIn(workflowIDs), RemoteTaskPending).
		OrderExpr("workflow_id, id").Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("error reading the pending remote tasks of %d workflows: %w", len(workflowIDs), err)
	}
	for _, r := range rows {
		out[r.WorkflowID] = append(out[r.WorkflowID], r.Function)
	}
	return out, nil
}
