package graph

import (
	"context"

	"github.com/cairnflow/cairn/graph/model"
	"github.com/cairnflow/cairn/persistence"
)

// workflowFilter converts the API's filter to the Store's, decoding its IDs.
func workflowFilter(f *model.WorkflowFilter) (persistence.WorkflowFilter, error) {
	var out persistence.WorkflowFilter
	if f == nil {
		return out, nil
	}
	var err error
	if out.IDs, err = decodeIDs("filter.ids", kindWorkflow, f.Ids); err != nil {
		return out, err
	}
	if f.ParentID != nil {
		id, err := decodeID("filter.parentId", kindWorkflow, *f.ParentID)
		if err != nil {
			return out, err
		}
		out.ParentID = &id
	}
	if f.RootID != nil {
		id, err := decodeID("filter.rootId", kindWorkflow, *f.RootID)
		if err != nil {
			return out, err
		}
		out.RootID = &id
	}
	out.Types, out.Statuses, out.States, out.TopLevel = f.Types, f.Statuses, f.States, f.TopLevel
	out.ExternalID, out.BusinessKey, out.ExecutorGroup = f.ExternalID, f.BusinessKey, f.ExecutorGroup
	out.CreatedAfter, out.CreatedBefore = f.CreatedAfter, f.CreatedBefore
	// A filter given with an empty list matches nothing, not everything.
	if (f.Ids != nil && len(f.Ids) == 0) || (f.Types != nil && len(f.Types) == 0) ||
		(f.Statuses != nil && len(f.Statuses) == 0) || (f.States != nil && len(f.States) == 0) {
		out.IDs = []int64{0}
	}
	return out, nil
}

// workflowOrder converts the API's order (default: created, newest first).
func workflowOrder(o *model.WorkflowOrder) (persistence.WorkflowOrderField, bool) {
	if o == nil {
		return persistence.WorkflowOrderCreated, true
	}
	field := map[model.WorkflowOrderField]persistence.WorkflowOrderField{
		model.WorkflowOrderFieldCreated:        persistence.WorkflowOrderCreated,
		model.WorkflowOrderFieldModified:       persistence.WorkflowOrderModified,
		model.WorkflowOrderFieldNextActivation: persistence.WorkflowOrderNextActivation,
		model.WorkflowOrderFieldPriority:       persistence.WorkflowOrderPriority,
	}[o.Field]
	return field, o.Direction == nil || *o.Direction != model.OrderDirectionAsc
}

// workflowConnection reads one keyset page of workflows.
func (r *Resolver) workflowConnection(ctx context.Context, filter persistence.WorkflowFilter, order *model.WorkflowOrder, first, last *int, after, before *string) (*model.WorkflowConnection, error) {
	p, err := parsePage(first, last, after, before)
	if err != nil {
		return nil, err
	}
	field, desc := workflowOrder(order)
	afterKey, err := parseWorkflowCursor("after", after, field, desc)
	if err != nil {
		return nil, err
	}
	beforeKey, err := parseWorkflowCursor("before", before, field, desc)
	if err != nil {
		return nil, err
	}
	wfs, more, err := r.reads(ctx).WorkflowList(ctx, persistence.WorkflowListParams{
		Filter: filter, OrderBy: field, Desc: desc, After: afterKey, Before: beforeKey,
		Limit: max(p.limit, 1), FromEnd: p.backward, OmitData: true})
	if err != nil {
		return nil, err
	}
	if p.limit == 0 {
		more, wfs = len(wfs) > 0, nil
	}
	loadersFor(ctx, r.reads(ctx)).listed(wfs...)
	conn := &model.WorkflowConnection{
		PageInfo: &model.PageInfo{},
		Count: func(ctx context.Context) (persistence.Count, error) {
			return r.reads(ctx).WorkflowCountUpTo(ctx, filter, r.cfg.ExactCountUpTo)
		},
	}
	if p.backward {
		conn.PageInfo.HasPreviousPage, conn.PageInfo.HasNextPage = more, before != nil
	} else {
		conn.PageInfo.HasNextPage, conn.PageInfo.HasPreviousPage = more, after != nil
	}
	cursors := make([]string, len(wfs))
	for i, w := range wfs {
		cursors[i] = workflowCursorOf(w, field, desc)
		conn.Edges = append(conn.Edges, &model.WorkflowEdge{Cursor: cursors[i], Node: w})
	}
	if conn.Edges == nil {
		conn.Edges = []*model.WorkflowEdge{}
	}
	setEnds(conn.PageInfo, cursors)
	return conn, nil
}
