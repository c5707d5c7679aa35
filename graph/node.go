package graph

import (
	"context"

	"github.com/cairnflow/cairn/graph/model"
)

// node resolves any opaque ID to its object, or nil when nothing has it. The typed nil of a missing
// row is turned into a plain nil so gqlgen writes null. field names the argument in errors.
func (r *Resolver) node(ctx context.Context, field, id string) (model.Node, error) {
	kind, rowID, ok := parseID(id)
	if !ok {
		return nil, invalidInput(field, "not an ID: "+quoteInput(id))
	}
	l := loadersFor(ctx, r.reads(ctx))
	switch kind {
	case kindWorkflow:
		return nonNil(l.workflows.Load(ctx, rowID)())
	case kindAction:
		return nonNil(l.actionByID.Load(ctx, rowID)())
	case kindTaskInstance:
		return nonNil(l.taskByID.Load(ctx, rowID)())
	case kindExecutor:
		return nonNil(l.executors.Load(ctx, rowID)())
	case kindDefinition:
		defs, err := r.reads(ctx).DefinitionGetByIDs(ctx, []int64{rowID})
		if err != nil || len(defs) == 0 {
			return nil, err
		}
		return defs[0], nil
	case kindSideEffect:
		ses, err := r.reads(ctx).SideEffectGetMany(ctx, []int64{rowID})
		if err != nil || len(ses) == 0 {
			return nil, err
		}
		return ses[0], nil
	}
	return nil, nil
}

func nonNil[T any](v *T, err error) (model.Node, error) {
	if err != nil || v == nil {
		return nil, err
	}
	return v, nil
}
