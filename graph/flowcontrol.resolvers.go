package graph

import (
	"context"

	"github.com/cairnflow/cairn/graph/model"
	"github.com/cairnflow/cairn/persistence"
)

func (r *mutationResolver) SetFlowControl(ctx context.Context, input model.SetFlowControlInput) (*model.FlowControlPayload, error) {
	fc, err := flowControlInput(input)
	if err != nil {
		return nil, err
	}
	c, err := r.engine.SetFlowControl(ctx, input.Type, fc)
	if err != nil {
		return nil, err
	}
	return r.flowControlPayload(ctx, c)
}

func (r *mutationResolver) ClearFlowControl(ctx context.Context, input model.ClearFlowControlInput) (*model.FlowControlPayload, error) {
	c, err := r.engine.ClearFlowControl(ctx, input.Type)
	if err != nil {
		return nil, err
	}
	return r.flowControlPayload(ctx, c)
}

func (r *queryResolver) FlowControls(ctx context.Context) ([]*model.FlowControl, error) {
	cs, err := r.engine.FlowControlList(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*model.FlowControl, 0, len(cs))
	for _, c := range cs {
		m, err := r.flowControlModel(ctx, c)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func (r *workflowResolver) BlockedReason(ctx context.Context, obj *persistence.Workflow) (*string, error) {
	return r.blockedReason(ctx, obj)
}
