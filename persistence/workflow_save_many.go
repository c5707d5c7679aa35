package persistence

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/schema"
)

// WorkflowGetManyForUpdate returns the workflows with the given IDs, in ID order, and locks their
// rows until the transaction ends (SQLite's transactions already hold the only write lock). An ID
// with no workflow is missing from the result. Locking in ID order keeps the one lock order of
// operations on a family: ancestors first.
func (s *Store) WorkflowGetManyForUpdate(ctx context.Context, ids []int64) ([]*Workflow, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var out []*Workflow
	q := s.forUpdate(s.idb.NewSelect().Model(&out).Where("w.id IN (?)", bunIn(ids)).OrderExpr("w.id"), false)
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("error loading %d workflows: %w", len(ids), err)
	}
	return out, nil
}

// WorkflowChange is a workflow as an operation read it and as it is to be saved.
type WorkflowChange struct {
	Read Workflow
	W    *Workflow
}

// savedColumns are the columns WorkflowSaveMany may write: all but the ones a workflow keeps from
// its start, and the version and modification time it sets itself.
func (s *Store) savedColumns() []*schema.Field {
	skip := map[string]bool{"id": true, "created": true, "version": true, "modified": true, "type": true}
	var out []*schema.Field
	for _, f := range s.idb.Dialect().Tables().Get(reflect.TypeOf(Workflow{})).Fields {
		if !skip[f.Name] {
			out = append(out, f)
		}
	}
	return out
}

// WorkflowSaveMany saves changed workflows with set-based statements: the workflows whose changed
// columns took the same values are written by one UPDATE, fenced by each one's version (the
// version each was read at), which it increments. A workflow that changed meanwhile fails the
// whole call with ErrConflict. Every workflow gets the same modification time.
func (s *Store) WorkflowSaveMany(ctx context.Context, cs []WorkflowChange) error {
	if len(cs) == 0 {
		return nil
	}
	now := Now()
	type group struct {
		columns []string
		ws      []*Workflow
	}
	fields := s.savedColumns()
	groups := map[string]*group{}
	var order []string
	for _, c := range cs {
		w := c.W
		if w.DataOmitted {
			return fmt.Errorf("error saving workflow %d: it was read without its input and variables", w.ID)
		}
		w.NextActivation = UTCPtr(w.NextActivation)
		read, after := reflect.ValueOf(&c.Read).Elem(), reflect.ValueOf(w).Elem()
		var columns []string
		var values []any
		for _, f := range fields {
			v := f.Value(after).Interface()
			if !sameValue(f.Value(read).Interface(), v) {
				columns = append(columns, f.Name)
				values = append(values, v)
			}
		}
		key, err := json.Marshal([]any{columns, values})
		if err != nil {
			return fmt.Errorf("error saving workflow %d: %w", w.ID, err)
		}
		g := groups[string(key)]
		if g == nil {
			g = &group{columns: append(columns, "modified")}
			groups[string(key)] = g
			order = append(order, string(key))
		}
		g.ws = append(g.ws, w)
	}
	sort.Strings(order)
	for _, k := range order {
		g := groups[k]
		ids := make([]int64, len(g.ws))
		var fence strings.Builder
		fence.WriteString("CASE id")
		for i, w := range g.ws {
			w.Modified = now
			ids[i] = w.ID
			fmt.Fprintf(&fence, " WHEN %d THEN %d", w.ID, w.Version)
		}
		fence.WriteString(" END")
		res, err := s.idb.NewUpdate().Model(g.ws[0]).Column(g.columns...).Set("version = version + 1").
			Where("id IN (?) AND version = ?", bunIn(ids), bun.Safe(fence.String())).Exec(ctx)
		if err != nil {
			return fmt.Errorf("error saving %d workflows: %w", len(ids), err)
		}
		if n, _ := res.RowsAffected(); n != int64(len(ids)) {
			return fmt.Errorf("%d of %d workflows changed while they were being updated: %w", int64(len(ids))-n, len(ids), ErrConflict)
		}
	}
	for _, c := range cs {
		c.W.Version++
	}
	return nil
}

// sameValue compares a column's values, times by the instant they name.
func sameValue(a, b any) bool {
	switch a := a.(type) {
	case time.Time:
		return a.Equal(b.(time.Time))
	case *time.Time:
		b := b.(*time.Time)
		return a == nil && b == nil || a != nil && b != nil && a.Equal(*b)
	}
	return reflect.DeepEqual(a, b)
}
