package persistence

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// AttributeKind is the kind of a search attribute's values, fixed for a name by its first use.
type AttributeKind string

// The kinds of search attributes.
const (
	AttributeString  AttributeKind = "string"
	AttributeNumber  AttributeKind = "number"
	AttributeBoolean AttributeKind = "boolean"
	AttributeTime    AttributeKind = "time"
)

// AttributeValue is one search attribute's value: S, N, B or T, as Kind says.
type AttributeValue struct {
	Kind AttributeKind
	S    string
	N    float64
	B    bool
	T    time.Time
}

// Compare orders two values of the same kind: -1, 0 or 1 (strings byte by byte, false before
// true), as the database compares the stored values.
func (v AttributeValue) Compare(o AttributeValue) int {
	switch v.Kind {
	case AttributeString:
		return strings.Compare(v.S, o.S)
	case AttributeNumber:
		switch {
		case v.N < o.N:
			return -1
		case v.N > o.N:
			return 1
		}
		return 0
	case AttributeBoolean:
		switch {
		case v.B == o.B:
			return 0
		case o.B:
			return -1
		}
		return 1
	default:
		return v.T.Compare(o.T)
	}
}

// JSONValue returns the value as it is written in JSON (a time as an RFC 3339 string in UTC).
func (v AttributeValue) JSONValue() any {
	switch v.Kind {
	case AttributeString:
		return v.S
	case AttributeNumber:
		return v.N
	case AttributeBoolean:
		return v.B
	default:
		return v.T.UTC().Format(time.RFC3339Nano)
	}
}

// WorkflowAttribute is one stored search attribute of a workflow: its value in the column of its
// kind (a boolean as 0 or 1 in n).
type WorkflowAttribute struct {
	bun.BaseModel `bun:"table:workflow_attributes,alias:wa"`

	WorkflowID int64         `bun:"workflow_id,pk"`
	Name       string        `bun:"name,pk"`
	Kind       AttributeKind `bun:"kind,notnull"`
	S          *string       `bun:"s"`
	N          *float64      `bun:"n"`
	T          *time.Time    `bun:"t"`
}

// NewWorkflowAttribute makes the row of a workflow's attribute.
func NewWorkflowAttribute(workflowID int64, name string, v AttributeValue) *WorkflowAttribute {
	a := &WorkflowAttribute{WorkflowID: workflowID, Name: name, Kind: v.Kind}
	switch v.Kind {
	case AttributeString:
		a.S = &v.S
	case AttributeNumber:
		a.N = &v.N
	case AttributeBoolean:
		n := 0.0
		if v.B {
			n = 1
		}
		a.N = &n
	default:
		t := UTC(v.T)
		a.T = &t
	}
	return a
}

// Value returns the stored attribute's value.
func (a *WorkflowAttribute) Value() AttributeValue {
	v := AttributeValue{Kind: a.Kind}
	switch {
	case a.S != nil:
		v.S = *a.S
	case a.N != nil && a.Kind == AttributeBoolean:
		v.B = *a.N != 0
	case a.N != nil:
		v.N = *a.N
	case a.T != nil:
		v.T = UTC(*a.T)
	}
	return v
}

// attributeName is the registry row that fixes the kind of a name.
type attributeName struct {
	bun.BaseModel `bun:"table:attribute_names"`

	Name string        `bun:"name,pk"`
	Kind AttributeKind `bun:"kind,notnull"`
}

// AttributeKinds returns the kinds of the named attributes that were ever used (a name never used
// is absent).
func (s *Store) AttributeKinds(ctx context.Context, names []string) (map[string]AttributeKind, error) {
	out := map[string]AttributeKind{}
	if len(names) == 0 {
		return out, nil
	}
	var rows []attributeName
	if err := s.idb.NewSelect().Model(&rows).Where("name IN (?)", bunIn(names)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("error reading the kinds of attributes: %w", err)
	}
	for _, r := range rows {
		out[r.Name] = r.Kind
	}
	return out, nil
}

// AttributeKindsAdd records the kinds of names not used before; a name already recorded keeps its
// kind (read it back with AttributeKinds).
func (s *Store) AttributeKindsAdd(ctx context.Context, kinds map[string]AttributeKind) error {
	if len(kinds) == 0 {
		return nil
	}
	rows := make([]*attributeName, 0, len(kinds))
	for n, k := range kinds {
		rows = append(rows, &attributeName{Name: n, Kind: k})
	}
	slices.SortFunc(rows, func(a, b *attributeName) int { return strings.Compare(a.Name, b.Name) })
	if _, err := s.dialect.insertSkippingDuplicates(ctx, s, &rows, "name", false); err != nil {
		return fmt.Errorf("error recording the kinds of attributes: %w", err)
	}
	return nil
}

// WorkflowAttributeInsertMany inserts the attributes of new workflows.
func (s *Store) WorkflowAttributeInsertMany(ctx context.Context, rows []*WorkflowAttribute) error {
	if len(rows) == 0 {
		return nil
	}
	if _, err := s.idb.NewInsert().Model(&rows).Exec(ctx); err != nil {
		return fmt.Errorf("error inserting %d workflow attributes: %w", len(rows), s.conflictOr(err))
	}
	return nil
}

// WorkflowAttributesSet sets some attributes of one workflow: a nil value removes the attribute.
func (s *Store) WorkflowAttributesSet(ctx context.Context, workflowID int64, values map[string]*AttributeValue) error {
	if len(values) == 0 {
		return nil
	}
	names := make([]string, 0, len(values))
	var rows []*WorkflowAttribute
	for n, v := range values {
		names = append(names, n)
		if v != nil {
			rows = append(rows, NewWorkflowAttribute(workflowID, n, *v))
		}
	}
	slices.Sort(names)
	slices.SortFunc(rows, func(a, b *WorkflowAttribute) int { return strings.Compare(a.Name, b.Name) })
	if _, err := s.idb.NewDelete().Model((*WorkflowAttribute)(nil)).
		Where("workflow_id = ? AND name IN (?)", workflowID, bunIn(names)).Exec(ctx); err != nil {
		return fmt.Errorf("error setting the attributes of workflow %d: %w", workflowID, err)
	}
	return s.WorkflowAttributeInsertMany(ctx, rows)
}

// WorkflowAttributeList returns the attributes of workflows, by workflow then name.
func (s *Store) WorkflowAttributeList(ctx context.Context, workflowIDs []int64) ([]*WorkflowAttribute, error) {
	var rows []*WorkflowAttribute
	if len(workflowIDs) == 0 {
		return rows, nil
	}
	if err := s.idb.NewSelect().Model(&rows).Where("wa.workflow_id IN (?)", bunIn(workflowIDs)).
		OrderExpr("wa.workflow_id, wa.name").Scan(ctx); err != nil {
		return nil, fmt.Errorf("error reading the attributes of %d workflows: %w", len(workflowIDs), err)
	}
	return rows, nil
}

// WorkflowAttributeMaps returns the attributes of workflows as maps by name (a workflow without
// any is absent).
func (s *Store) WorkflowAttributeMaps(ctx context.Context, workflowIDs []int64) (map[int64]map[string]AttributeValue, error) {
	rows, err := s.WorkflowAttributeList(ctx, workflowIDs)
	if err != nil {
		return nil, err
	}
	out := map[int64]map[string]AttributeValue{}
	for _, r := range rows {
		m := out[r.WorkflowID]
		if m == nil {
			m = map[string]AttributeValue{}
			out[r.WorkflowID] = m
		}
		m[r.Name] = r.Value()
	}
	return out, nil
}

func init() { historyTables = append(historyTables, "workflow_attributes") }
