package graph

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cairnflow/cairn/graph/model"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// Bounds of attribute filters.
const (
	maxAttributeFilters  = 16
	maxAttributeInValues = 100
)

// attributesJSON writes search attributes as a JSON object ({} when none), its keys sorted.
func attributesJSON(m map[string]persistence.AttributeValue) (json.RawMessage, error) {
	out := make(map[string]any, len(m))
	for n, v := range m {
		out[n] = v.JSONValue()
	}
	return json.Marshal(out)
}

// workflowAttributes returns a workflow's search attributes: those read with it (a live event's),
// else through the response's dataloader.
func (r *Resolver) workflowAttributes(ctx context.Context, w *persistence.Workflow) (map[string]persistence.AttributeValue, error) {
	if w.Attributes != nil {
		return w.Attributes, nil
	}
	return loadersFor(ctx, r.store).attributes.Load(ctx, w.ID)()
}

// filterOf converts the API's workflow filter, its attribute conditions checked against the kinds
// of their names.
func (r *Resolver) filterOf(ctx context.Context, f *model.WorkflowFilter) (persistence.WorkflowFilter, error) {
	out, err := workflowFilter(f)
	if err == nil {
		err = r.stuckFilter(ctx, f, &out)
	}
	if err != nil || f == nil || f.Attributes == nil {
		return out, err
	}
	if len(f.Attributes) > maxAttributeFilters {
		return out, workflow.NewError(workflow.CodeInvalidInput, "filter.attributes", "at most %d attribute conditions, not %d", maxAttributeFilters, len(f.Attributes))
	}
	names := make([]string, 0, len(f.Attributes))
	for i, a := range f.Attributes {
		if err := workflow.CheckAttributeName(fmt.Sprintf("filter.attributes[%d].name", i), a.Name); err != nil {
			return out, err
		}
		names = append(names, a.Name)
	}
	kinds, err := r.store.AttributeKinds(ctx, names)
	if err != nil {
		return out, err
	}
	out.Attributes = make([]persistence.AttributeFilter, 0, len(f.Attributes))
	for i, a := range f.Attributes {
		af, err := attributeFilter(fmt.Sprintf("filter.attributes[%d]", i), a, kinds[a.Name])
		if err != nil {
			return out, err
		}
		out.Attributes = append(out.Attributes, af)
	}
	return out, nil
}

// given reports whether a JSON input field was given a value (null counts as not given).
func given(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// attributeFilter converts one attribute condition; kind is its name's ("" for a name never used,
// which matches nothing).
func attributeFilter(field string, a *model.AttributeFilter, kind persistence.AttributeKind) (persistence.AttributeFilter, error) {
	out := persistence.AttributeFilter{Name: a.Name, Kind: kind}
	var raws []json.RawMessage
	ops := 0
	for _, c := range []struct {
		op  persistence.AttributeOp
		raw json.RawMessage
	}{{persistence.AttributeEq, a.Eq}, {persistence.AttributeGt, a.Gt}, {persistence.AttributeGte, a.Gte},
		{persistence.AttributeLt, a.Lt}, {persistence.AttributeLte, a.Lte}} {
		if given(c.raw) {
			ops++
			out.Op, raws = c.op, []json.RawMessage{c.raw}
		}
	}
	if a.In != nil {
		ops++
		out.Op, raws = persistence.AttributeIn, a.In
		if len(a.In) == 0 || len(a.In) > maxAttributeInValues {
			return out, workflow.NewError(workflow.CodeInvalidInput, field+".in", "in takes 1 to %d values, not %d", maxAttributeInValues, len(a.In))
		}
	}
	if a.Prefix != nil {
		ops++
		b, _ := json.Marshal(*a.Prefix)
		out.Op, raws = persistence.AttributePrefix, []json.RawMessage{b}
	}
	if ops != 1 {
		return out, workflow.NewError(workflow.CodeInvalidInput, field, "attribute %q: give exactly one of eq, in, gt, gte, lt, lte or prefix", a.Name)
	}
	opField := field + "." + string(out.Op)
	if kind == "" {
		return out, nil // a name never used: no workflow has it
	}
	switch out.Op {
	case persistence.AttributeGt, persistence.AttributeGte, persistence.AttributeLt, persistence.AttributeLte:
		if kind == persistence.AttributeBoolean {
			return out, workflow.NewError(workflow.CodeInvalidInput, opField, "attribute %q holds booleans, which have no order: use eq or in", a.Name)
		}
	case persistence.AttributePrefix:
		if kind != persistence.AttributeString {
			return out, workflow.NewError(workflow.CodeInvalidInput, opField, "attribute %q holds %s values; prefix compares strings", a.Name, kind)
		}
	}
	for _, raw := range raws {
		v, err := workflow.AttributeValueOf(opField, a.Name, raw, kind)
		if err != nil {
			return out, err
		}
		out.Values = append(out.Values, v)
	}
	return out, nil
}
