package graph

import (
	"context"

	"github.com/cairnflow/cairn/persistence"
)

// dataChunk is how many workflows' input and variables one statement reads: with the limits'
// defaults (1 MiB input, 4 MiB variables) a chunk holds at most about 20 MB, so a response over
// its byte budget stops loading within one chunk of it.
const dataChunk = 4

// withData returns the workflow with its input and variables: itself when it was read whole, else
// a copy filled in from the response's loader (lists read workflows without them).
func (r *workflowResolver) withData(ctx context.Context, obj *persistence.Workflow) (*persistence.Workflow, error) {
	if !obj.DataOmitted {
		return obj, nil
	}
	d, err := loadersFor(ctx, r.reads(ctx)).data.Load(ctx, obj.ID)()
	if err != nil {
		return nil, err
	}
	w := *obj
	w.DataOmitted = false
	if d != nil {
		w.Input, w.Variables = d.Input, d.Variables
	}
	return &w, nil
}

// fetchData reads workflows' input and variables a few at a time, and stops once what it read
// would take the response past its byte budget: a page of workflows with megabytes of variables
// each is never held in memory whole only to be refused (RESPONSE_TOO_LARGE).
func fetchData(ctx context.Context, store Reads, ids []int64) (map[int64]*persistence.WorkflowData, error) {
	b := budgetOf(ctx)
	out := make(map[int64]*persistence.WorkflowData, len(ids))
	var read int64
	for start := 0; start < len(ids); start += dataChunk {
		if b != nil && b.used.Load()+read > b.max {
			b.add(read) // over: ends the response with its one error
			return nil, b.error()
		}
		rows, err := store.WorkflowDataGetMany(ctx, ids[start:min(start+dataChunk, len(ids))])
		if err != nil {
			return nil, err
		}
		for _, d := range rows {
			out[d.ID] = d
			read += int64(len(d.Input) + len(d.Variables))
		}
	}
	return out, nil
}
