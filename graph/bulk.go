package graph

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/cairnflow/cairn/graph/model"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// actorAnonymous is who acts through a server that does not authenticate.
const actorAnonymous = "anonymous"

// actorOf returns who makes a request: its API token's name, or anonymous without auth.
func actorOf(ctx context.Context) string {
	if p, ok := PrincipalOf(ctx); ok && p.Name != "" {
		return p.Name
	}
	return actorAnonymous
}

// bulkParams converts startBulkOperation's input.
func bulkParams(ctx context.Context, in model.StartBulkOperationInput) (workflow.BulkParams, error) {
	f, err := workflowFilter(in.Filter)
	if err != nil {
		return workflow.BulkParams{}, err
	}
	doc, err := json.Marshal(in.Filter)
	if err != nil {
		return workflow.BulkParams{}, err
	}
	p := workflow.BulkParams{Action: string(in.Action), Filter: f, FilterDoc: doc, All: in.All != nil && *in.All,
		DryRun: in.DryRun != nil && *in.DryRun, Reason: str(in.Reason), Actor: actorOf(ctx), State: str(in.State)}
	if in.Signal != nil {
		p.SignalName, p.SignalPayload = in.Signal.Name, in.Signal.Payload
	}
	return p, nil
}

// bulkFailures returns a page of a bulk operation's failures; the cursor is the workflow's ID.
func (r *Resolver) bulkFailures(ctx context.Context, op *persistence.BulkOperation, first *int, after *string) (*model.BulkOperationFailurePage, error) {
	limit := 50
	if first != nil {
		n, err := listFirst(first)
		if err != nil {
			return nil, err
		}
		limit = n
	}
	var afterID int64
	if after != nil {
		id, err := decodeID("after", kindWorkflow, *after)
		if err != nil {
			return nil, err
		}
		afterID = id
	}
	rows, err := r.store.BulkFailurePage(ctx, op.ID, afterID, limit+1)
	if err != nil {
		return nil, err
	}
	out := &model.BulkOperationFailurePage{Items: []*model.BulkOperationFailure{}, HasNextPage: len(rows) > limit}
	if len(rows) > limit {
		rows = rows[:limit]
	}
	ids := make([]int64, len(rows))
	for i, t := range rows {
		ids[i] = t.WorkflowID
	}
	wfs, err := r.store.WorkflowGetManyWithoutData(ctx, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]*persistence.Workflow, len(wfs))
	for _, w := range wfs {
		byID[w.ID] = w
	}
	for _, t := range rows {
		code, message, _ := strings.Cut(str(t.Error), ": ")
		id := encodeID(kindWorkflow, t.WorkflowID)
		out.Items = append(out.Items, &model.BulkOperationFailure{WorkflowID: id, Workflow: byID[t.WorkflowID], Code: code, Message: message})
		out.EndCursor = &id
	}
	return out, nil
}

// bulkPoll is how often bulkOperationUpdated reads its operation.
const bulkPoll = 200 * time.Millisecond

// bulkOperationUpdated sends a bulk operation now and each time it changes, until it ends.
func (r *Resolver) bulkOperationUpdated(ctx context.Context, id string) (<-chan *persistence.BulkOperation, error) {
	oid, err := decodeID("id", kindBulk, id)
	if err != nil {
		return nil, err
	}
	release, err := r.subs.acquire(ctx)
	if err != nil {
		return nil, err
	}
	current, err := r.store.BulkOperationGet(ctx, oid)
	if err != nil {
		release()
		return nil, notFoundAs(err, "id", "bulk operation", id)
	}
	out := make(chan *persistence.BulkOperation, r.cfg.SubscriptionBuffer)
	out <- current
	go func() {
		defer release()
		defer close(out)
		t := time.NewTicker(bulkPoll)
		defer t.Stop()
		last := current
		for !last.Status.Ended() {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			op, err := r.store.BulkOperationGet(ctx, oid)
			if err != nil {
				return
			}
			if op.Status != last.Status || op.Processed != last.Processed || !op.Modified.Equal(last.Modified) {
				sendLatest(out, op)
				last = op
			}
		}
	}()
	return out, nil
}
