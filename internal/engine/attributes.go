package engine

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// attributeKinds returns the kinds of attribute names, from the node's cache or the database; a
// name never used is absent.
func (e *Engine) attributeKinds(ctx context.Context, names []string) (map[string]persistence.AttributeKind, error) {
	out := make(map[string]persistence.AttributeKind, len(names))
	var missing []string
	for _, n := range names {
		if k, ok := e.attrKinds.Load(n); ok {
			out[n] = k.(persistence.AttributeKind)
		} else {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	got, err := e.store.AttributeKinds(ctx, missing)
	if err != nil {
		return nil, err
	}
	for n, k := range got {
		e.attrKinds.Store(n, k)
		out[n] = k
	}
	return out, nil
}

// resolveAttributes reads a JSON object of search attributes (field names it in errors) as values
// of their names' kinds; a name used for the first time gets the kind of its value. With
// allowNull a null value removes the attribute (a nil entry). Nothing given: nil.
func (e *Engine) resolveAttributes(ctx context.Context, field string, raw json.RawMessage, allowNull bool) (map[string]*persistence.AttributeValue, error) {
	m, err := workflow.DecodeAttributes(field, raw, allowNull)
	if err != nil || len(m) == 0 {
		return nil, err
	}
	names := make([]string, 0, len(m))
	for n, v := range m {
		if v != nil {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	kinds, err := e.attributeKinds(ctx, names)
	if err != nil {
		return nil, err
	}
	fresh := map[string]persistence.AttributeKind{}
	for _, n := range names {
		if _, ok := kinds[n]; ok {
			continue
		}
		k := workflow.SuggestedKind(m[n])
		if k == "" {
			_, err := workflow.AttributeValueOf(field+"."+n, n, m[n], "")
			return nil, err
		}
		fresh[n] = k
	}
	if len(fresh) > 0 {
		// Another request may record the same name first: its kind wins, read back.
		if err := e.store.AttributeKindsAdd(ctx, fresh); err != nil {
			return nil, err
		}
		if kinds, err = e.attributeKinds(ctx, names); err != nil {
			return nil, err
		}
	}
	out := make(map[string]*persistence.AttributeValue, len(m))
	for n, raw := range m {
		if raw == nil {
			out[n] = nil
		}
	}
	for _, n := range names {
		v, err := workflow.AttributeValueOf(field+"."+n, n, m[n], kinds[n])
		if err != nil {
			return nil, err
		}
		out[n] = &v
	}
	return out, nil
}

// attributeRows makes the rows of a new workflow's attributes.
func attributeRows(workflowID int64, values map[string]*persistence.AttributeValue) []*persistence.WorkflowAttribute {
	rows := make([]*persistence.WorkflowAttribute, 0, len(values))
	for n, v := range values {
		if v != nil {
			rows = append(rows, persistence.NewWorkflowAttribute(workflowID, n, *v))
		}
	}
	slices.SortFunc(rows, func(a, b *persistence.WorkflowAttribute) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return rows
}

// setAttributes writes changes of a workflow's attributes and refuses, naming field, a result of
// more than workflow.MaxAttributes attributes.
func setAttributes(ctx context.Context, tx *persistence.Store, field string, workflowID int64, values map[string]*persistence.AttributeValue) error {
	if len(values) == 0 {
		return nil
	}
	if err := tx.WorkflowAttributesSet(ctx, workflowID, values); err != nil {
		return err
	}
	rows, err := tx.WorkflowAttributeList(ctx, []int64{workflowID})
	if err != nil {
		return err
	}
	if len(rows) > workflow.MaxAttributes {
		return invalid(field, "a workflow has at most %d attributes; this change would make %d", workflow.MaxAttributes, len(rows))
	}
	return nil
}
