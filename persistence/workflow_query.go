package persistence

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"
)

// WorkflowFilter selects workflows for the read API; an empty field does not filter.
type WorkflowFilter struct {
	IDs         []int64
	Types       []string
	Statuses    []Status
	States      []string
	ExternalID  *string
	BusinessKey *string
	ParentID    *int64
	RootID      *int64
	// TopLevel keeps only the workflows with no parent (true) or only children (false).
	TopLevel      *bool
	ExecutorGroup *string
	ExecutorIDs   []int64
	CreatedAfter  *time.Time
	CreatedBefore *time.Time
	// Attributes keeps the workflows whose search attributes pass every one of these filters.
	Attributes []AttributeFilter
	// Stuck keeps the workflows that Rules find stuck (true) or not (false); Rules is required
	// with it. Matches does not apply it: a workflow becomes stuck by the passing of time.
	Stuck *StuckFilter
}

// StuckFilter selects workflows by the stuck rules of one instant.
type StuckFilter struct {
	Want  bool
	Rules *StuckRules
}

// apply adds the filter's conditions to a query on workflows (alias w).
func (f WorkflowFilter) apply(q *bun.SelectQuery) *bun.SelectQuery {
	if len(f.IDs) > 0 {
		q = q.Where("w.id IN (?)", bunIn(f.IDs))
	}
	if len(f.Types) > 0 {
		q = q.Where("w.type IN (?)", bunIn(f.Types))
	}
	if len(f.Statuses) > 0 {
		q = q.Where("w.status IN (?)", bunIn(f.Statuses))
	}
	if len(f.States) > 0 {
		q = q.Where("w.state IN (?)", bunIn(f.States))
	}
	if f.ExternalID != nil {
		q = q.Where("w.external_id = ?", *f.ExternalID)
	}
	if f.BusinessKey != nil {
		q = q.Where("w.business_key = ?", *f.BusinessKey)
	}
	if f.ParentID != nil {
		q = q.Where("w.parent_id = ?", *f.ParentID)
	}
	if f.RootID != nil {
		q = q.Where("w.root_id = ?", *f.RootID)
	}
	if f.TopLevel != nil {
		// Indexed both ways: workflows_top_level_idx (no parent) and workflows_parent_idx (children).
		if *f.TopLevel {
			q = q.Where("w.parent_id IS NULL")
		} else {
			q = q.Where("w.parent_id IS NOT NULL")
		}
	}
	if f.ExecutorGroup != nil {
		q = q.Where("w.executor_group = ?", *f.ExecutorGroup)
	}
	if len(f.ExecutorIDs) > 0 {
		q = q.Where("w.executor_id IN (?)", bunIn(f.ExecutorIDs))
	}
	if f.CreatedAfter != nil {
		q = q.Where("w.created > ?", UTC(*f.CreatedAfter))
	}
	if f.CreatedBefore != nil {
		q = q.Where("w.created < ?", UTC(*f.CreatedBefore))
	}
	for _, a := range f.Attributes {
		q = a.apply(q)
	}
	if f.Stuck != nil {
		q = f.Stuck.Rules.apply(q, f.Stuck.Want)
	}
	return q
}

// WorkflowOrderField is a column workflows can be listed by (ties broken by ID).
type WorkflowOrderField string

// The orderable columns.
const (
	WorkflowOrderCreated        WorkflowOrderField = "created"
	WorkflowOrderModified       WorkflowOrderField = "modified"
	WorkflowOrderNextActivation WorkflowOrderField = "next_activation"
	WorkflowOrderPriority       WorkflowOrderField = "priority"
)

// Valid reports whether f is one of the orderable columns.
func (f WorkflowOrderField) Valid() bool {
	switch f {
	case WorkflowOrderCreated, WorkflowOrderModified, WorkflowOrderNextActivation, WorkflowOrderPriority:
		return true
	}
	return false
}

// WorkflowKey is a workflow's position in an order: the value of the order column (a time.Time,
// an int, or nil for a workflow with no next activation) and the ID.
type WorkflowKey struct {
	Value any
	ID    int64
}

// OrderKey returns the workflow's position in an order by field.
func (w *Workflow) OrderKey(field WorkflowOrderField) WorkflowKey {
	switch field {
	case WorkflowOrderModified:
		return WorkflowKey{Value: w.Modified, ID: w.ID}
	case WorkflowOrderNextActivation:
		if w.NextActivation == nil {
			return WorkflowKey{ID: w.ID}
		}
		return WorkflowKey{Value: *w.NextActivation, ID: w.ID}
	case WorkflowOrderPriority:
		return WorkflowKey{Value: w.Priority, ID: w.ID}
	default:
		return WorkflowKey{Value: w.Created, ID: w.ID}
	}
}

// WorkflowListParams is the input of WorkflowList: a keyset page of workflows.
type WorkflowListParams struct {
	Filter  WorkflowFilter
	OrderBy WorkflowOrderField
	// Desc lists the highest values first. Workflows without a value (no next activation) come
	// last in either direction.
	Desc bool
	// After and Before bound the page (exclusive) by positions in the order.
	After  *WorkflowKey
	Before *WorkflowKey
	// Limit is the page size (required, > 0).
	Limit int
	// FromEnd takes the last Limit workflows between the bounds instead of the first.
	FromEnd bool
	// OmitData leaves out each workflow's input and variables, the columns that may hold megabytes:
	// a page that does not show them reads none of them (Workflow.DataOmitted is then set, and
	// WorkflowDataGetMany reads them for the workflows that need them).
	OmitData bool
}

// WorkflowList returns a page of workflows in the requested order, and whether more workflows lie
// beyond the page in the direction it was read (after it, or before it when FromEnd).
func (s *Store) WorkflowList(ctx context.Context, p WorkflowListParams) ([]*Workflow, bool, error) {
	if p.Limit <= 0 {
		return nil, false, fmt.Errorf("error listing workflows: limit must be positive, not %d", p.Limit)
	}
	if p.OrderBy == "" {
		p.OrderBy = WorkflowOrderCreated
	}
	if !p.OrderBy.Valid() {
		return nil, false, fmt.Errorf("error listing workflows: unknown order %q", p.OrderBy)
	}
	col := "w." + string(p.OrderBy)
	nullable := p.OrderBy == WorkflowOrderNextActivation
	after, before := p.After, p.Before
	if p.OrderBy == WorkflowOrderCreated {
		// Creation order is ID order: IDs are handed out as workflows are inserted, so the primary
		// key serves it and no index on created has to be kept up on every step.
		col = "w.id"
		after, before = byID(after), byID(before)
	}
	var wfs []*Workflow
	q := p.Filter.apply(s.idb.NewSelect().Model(&wfs))
	if p.OmitData {
		q = q.ExcludeColumn("input", "variables")
	}
	if after != nil {
		q = keysetAfter(q, col, nullable, p.Desc, false, *after)
	}
	if before != nil {
		// Rows before a key are the rows after it in the reversed order (where nulls come first).
		q = keysetAfter(q, col, nullable, !p.Desc, true, *before)
	}
	desc, nullsFirst := p.Desc, false
	if p.FromEnd {
		desc, nullsFirst = !desc, true
	}
	q = orderBy(q, col, nullable, desc, nullsFirst).Limit(int64(p.Limit + 1))
	if err := q.Scan(ctx); err != nil {
		return nil, false, fmt.Errorf("error listing workflows: %w", err)
	}
	more := len(wfs) > p.Limit
	if more {
		wfs = wfs[:p.Limit]
	}
	if p.FromEnd {
		slices.Reverse(wfs)
	}
	if p.OmitData {
		for _, w := range wfs {
			w.DataOmitted = true
		}
	}
	return wfs, more, nil
}

// WorkflowData is a workflow's input and variables, read apart from the rest of its row.
type WorkflowData struct {
	ID        int64           `bun:"id"`
	Input     json.RawMessage `bun:"input"`
	Variables json.RawMessage `bun:"variables"`
}

// WorkflowDataGetMany reads the input and variables of workflows (those it does not find are left
// out).
func (s *Store) WorkflowDataGetMany(ctx context.Context, ids []int64) ([]*WorkflowData, error) {
	var rows []*WorkflowData
	if len(ids) == 0 {
		return rows, nil
	}
	if err := s.idb.NewSelect().Table("workflows").Column("id", "input", "variables").
		Where("id IN (?)", bunIn(ids)).Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("error reading the data of %d workflows: %w", len(ids), err)
	}
	return rows, nil
}

// byID turns a position in creation order into one by ID.
func byID(k *WorkflowKey) *WorkflowKey {
	if k == nil {
		return nil
	}
	return &WorkflowKey{Value: k.ID, ID: k.ID}
}

// orderBy orders by col then ID in one direction, with NULLs of a nullable col first or last.
func orderBy(q *bun.SelectQuery, col string, nullable, desc, nullsFirst bool) *bun.SelectQuery {
	dir := "ASC"
	if desc {
		dir = "DESC"
	}
	if nullable {
		nullRank := "ASC"
		if nullsFirst {
			nullRank = "DESC"
		}
		q = q.OrderExpr("CASE WHEN " + col + " IS NULL THEN 1 ELSE 0 END " + nullRank)
	}
	return q.OrderExpr(col + " " + dir).OrderExpr("w.id " + dir)
}

// keysetAfter keeps the rows that come strictly after key in the order (col, id) described by
// desc and nullsFirst.
func keysetAfter(q *bun.SelectQuery, col string, nullable, desc, nullsFirst bool, key WorkflowKey) *bun.SelectQuery {
	op := ">"
	if desc {
		op = "<"
	}
	value := key.Value
	if t, ok := value.(time.Time); ok {
		value = UTC(t)
	}
	if value == nil {
		if !nullable {
			return q.Where("w.id "+op+" ?", key.ID)
		}
		if nullsFirst {
			return q.Where("(("+col+" IS NULL AND w.id "+op+" ?) OR "+col+" IS NOT NULL)", key.ID)
		}
		return q.Where(col+" IS NULL AND w.id "+op+" ?", key.ID)
	}
	cond := "(" + col + " " + op + " ? OR (" + col + " = ? AND w.id " + op + " ?)"
	if nullable && !nullsFirst {
		cond += " OR " + col + " IS NULL"
	}
	return q.Where(cond+")", value, value, key.ID)
}

// WorkflowCount counts the workflows a filter selects.
func (s *Store) WorkflowCount(ctx context.Context, f WorkflowFilter) (int, error) {
	n, err := f.apply(s.idb.NewSelect().Model((*Workflow)(nil))).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("error counting workflows: %w", err)
	}
	return int(n), nil
}

// WorkflowStatRow is the number of workflows of one type in one status.
type WorkflowStatRow struct {
	Type   string `bun:"type"`
	Status Status `bun:"status"`
	Count  int    `bun:"n"`
}

// WorkflowStats counts the workflows a filter selects by type and status, in one statement.
func (s *Store) WorkflowStats(ctx context.Context, f WorkflowFilter) ([]WorkflowStatRow, error) {
	var rows []WorkflowStatRow
	q := f.apply(s.idb.NewSelect().Model((*Workflow)(nil))).
		ColumnExpr("w.type AS type, w.status AS status, COUNT(*) AS n").
		GroupExpr("w.type, w.status").OrderExpr("w.type, w.status")
	if err := q.Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("error counting workflows by type and status: %w", err)
	}
	return rows, nil
}

// WorkflowHeldBy returns the workflows the given executors hold now (status EXECUTING), by ID.
func (s *Store) WorkflowHeldBy(ctx context.Context, executorIDs []int64) ([]*Workflow, error) {
	if len(executorIDs) == 0 {
		return nil, nil
	}
	var wfs []*Workflow
	if err := s.idb.NewSelect().Model(&wfs).
		Where("w.executor_id IN (?) AND w.status = ?", bunIn(executorIDs), StatusExecuting).
		OrderExpr("w.id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("error loading the workflows held by executors: %w", err)
	}
	return wfs, nil
}
