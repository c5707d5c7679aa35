package graph

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/cairnflow/cairn/graph/model"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// Page sizes of connections.
const (
	defaultPageSize = 50
	maxPageSize     = 500
)

// pageArgs are a connection's first/after/last/before, checked.
type pageArgs struct {
	limit    int
	backward bool
	after    *string
	before   *string
}

// parsePage checks first/last: one of them (or neither, for the default page), 0 to maxPageSize.
func parsePage(first, last *int, after, before *string) (pageArgs, error) {
	p := pageArgs{limit: defaultPageSize, after: after, before: before}
	switch {
	case first != nil && last != nil:
		return p, invalidInput("last", "give first or last, not both")
	case first != nil:
		p.limit = *first
		if p.limit < 0 || p.limit > maxPageSize {
			return p, invalidInput("first", fmt.Sprintf("first must be between 0 and %d", maxPageSize))
		}
	case last != nil:
		p.limit, p.backward = *last, true
		if p.limit < 0 || p.limit > maxPageSize {
			return p, invalidInput("last", fmt.Sprintf("last must be between 0 and %d", maxPageSize))
		}
	}
	return p, nil
}

// PageSize is the number of items a connection returns for its first and last arguments: the
// HTTP server's cost limit prices a connection's items by it.
func PageSize(first, last *int) int {
	switch {
	case first != nil && *first >= 0:
		return min(*first, maxPageSize)
	case last != nil && *last >= 0:
		return min(*last, maxPageSize)
	}
	return defaultPageSize
}

// workflowCursor is the content of a workflow cursor: its position in one order.
type workflowCursor struct {
	Order string     `json:"o"`
	Time  *time.Time `json:"t,omitempty"`
	Int   *int       `json:"n,omitempty"`
	ID    int64      `json:"i"`
}

func orderName(field persistence.WorkflowOrderField, desc bool) string {
	if desc {
		return string(field) + ":desc"
	}
	return string(field) + ":asc"
}

func encodeCursor(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

// maxCursorLength bounds the cursors worth decoding: the longest cursor cairn makes is far shorter.
const maxCursorLength = 256

// decodeCursor decodes a cursor into v strictly: base64url of one JSON object with only v's
// fields. Anything else is an INVALID_INPUT error naming field; the caller checks the values.
func decodeCursor(field, s string, v any) error {
	if len(s) > maxCursorLength {
		return invalidInput(field, "not a cursor of this list")
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return invalidInput(field, "not a cursor of this list")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if dec.Decode(v) != nil || dec.More() {
		return invalidInput(field, "not a cursor of this list")
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalidInput(field, "not a cursor of this list")
	}
	return nil
}

// workflowCursorOf returns the cursor of a workflow in an order.
func workflowCursorOf(w *persistence.Workflow, field persistence.WorkflowOrderField, desc bool) string {
	k := w.OrderKey(field)
	c := workflowCursor{Order: orderName(field, desc), ID: k.ID}
	switch v := k.Value.(type) {
	case time.Time:
		c.Time = &v
	case int:
		c.Int = &v
	}
	return encodeCursor(c)
}

// parseWorkflowCursor decodes a workflow cursor made for the same order. Its position must hold
// exactly the value that order sorts by, of the column's type and range (a forged cursor must
// never reach the database as a comparison it cannot make): a priority for PRIORITY, a time for
// CREATED and MODIFIED, a time or nothing (no next activation) for NEXT_ACTIVATION.
func parseWorkflowCursor(arg string, s *string, field persistence.WorkflowOrderField, desc bool) (*persistence.WorkflowKey, error) {
	if s == nil {
		return nil, nil
	}
	var c workflowCursor
	if err := decodeCursor(arg, *s, &c); err != nil {
		return nil, err
	}
	if c.Order != orderName(field, desc) {
		return nil, invalidInput(arg, "the cursor belongs to another order of the list")
	}
	bad := invalidInput(arg, "not a cursor of this list")
	if c.ID <= 0 {
		return nil, bad
	}
	k := &persistence.WorkflowKey{ID: c.ID}
	switch field {
	case persistence.WorkflowOrderPriority:
		if c.Int == nil || c.Time != nil || *c.Int < workflow.MinPriority || *c.Int > workflow.MaxPriority {
			return nil, bad
		}
		k.Value = *c.Int
	case persistence.WorkflowOrderNextActivation:
		if c.Int != nil {
			return nil, bad
		}
	default:
		if c.Time == nil || c.Int != nil {
			return nil, bad
		}
	}
	if c.Time != nil {
		if workflow.CheckTime(arg, *c.Time) != nil {
			return nil, bad
		}
		k.Value = c.Time.UTC()
	}
	return k, nil
}

// rowCursor is the content of a cursor of a workflow's actions or task instances.
type rowCursor struct {
	Kind string `json:"k"`
	ID   int64  `json:"i"`
}

func rowCursorOf(kind string, id int64) string { return encodeCursor(rowCursor{Kind: kind, ID: id}) }

func parseRowCursor(arg, kind string, s *string) (int64, error) {
	if s == nil {
		return 0, nil
	}
	var c rowCursor
	if err := decodeCursor(arg, *s, &c); err != nil {
		return 0, err
	}
	if c.Kind != kind || c.ID <= 0 {
		return 0, invalidInput(arg, "not a cursor of this list")
	}
	return c.ID, nil
}

// rowPage turns page arguments over rows ordered by ID into the Store's page parameters (one more
// row than asked, to know whether more follow).
func rowPage(kind string, p pageArgs) (persistence.PageParams, error) {
	after, err := parseRowCursor("after", kind, p.after)
	if err != nil {
		return persistence.PageParams{}, err
	}
	before, err := parseRowCursor("before", kind, p.before)
	if err != nil {
		return persistence.PageParams{}, err
	}
	if p.backward {
		// Read newest first from `before`, then reverse: After and Before follow the direction.
		return persistence.PageParams{After: before, Before: after, Limit: p.limit + 1, Desc: true}, nil
	}
	return persistence.PageParams{After: after, Before: before, Limit: p.limit + 1}, nil
}

// cutPage trims the extra row of a page read by rowPage, puts it in ID order and says whether more
// rows lie beyond it.
func cutPage[V any](rows []V, p pageArgs) ([]V, *model.PageInfo) {
	more := len(rows) > p.limit
	rows = append([]V(nil), rows[:min(len(rows), p.limit)]...) // the loader's slice is shared
	info := &model.PageInfo{}
	if p.backward {
		for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
			rows[i], rows[j] = rows[j], rows[i]
		}
		info.HasPreviousPage, info.HasNextPage = more, p.before != nil
	} else {
		info.HasNextPage, info.HasPreviousPage = more, p.after != nil
	}
	return rows, info
}

// setEnds fills the start and end cursors of a page.
func setEnds(info *model.PageInfo, cursors []string) *model.PageInfo {
	if len(cursors) > 0 {
		info.StartCursor, info.EndCursor = &cursors[0], &cursors[len(cursors)-1]
	}
	return info
}

// listFirst checks the first argument of a plain list (executors, schedules): 1 to 1000, or
// null for all (0).
func listFirst(first *int) (int, error) {
	if first == nil {
		return 0, nil
	}
	if *first < 1 || *first > 1000 {
		return 0, &workflow.Error{Code: workflow.CodeInvalidInput, Field: "first", Message: fmt.Sprintf("first must be between 1 and 1000, not %d", *first)}
	}
	return *first, nil
}
