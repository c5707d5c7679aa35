package serverless

import (
	"encoding/json"
	"slices"

	"github.com/cairnflow/cairn/workflow"
)

// AttributesKey is the reserved key of $context under which a document sets its workflow's search
// attributes: a task that exports {"searchAttributes": {"region": "eu"}} (with the rest of the
// context) sets the attribute region; a key that leaves the object removes its attribute.
const AttributesKey = "searchAttributes"

// contextAttributes returns the object under AttributesKey of a context (nil: none).
func contextAttributes(ctx any) map[string]any {
	m, ok := ctx.(map[string]any)
	if !ok {
		return nil
	}
	attrs, _ := m[AttributesKey].(map[string]any)
	return attrs
}

// saveAttributes sets the search attributes that the step's context changed since the stored one
// (read before the step's data is saved). A value the API would refuse fails the attempt for good.
func (r *run) saveAttributes(sc workflow.StepContext) error {
	var stored any
	if _, err := sc.Var(varContext, &stored); err != nil {
		return err
	}
	before, after := contextAttributes(stored), contextAttributes(r.st.Context)
	if len(before) == 0 && len(after) == 0 {
		return nil
	}
	names := make([]string, 0, len(before)+len(after))
	for n := range before {
		names = append(names, n)
	}
	for n := range after {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range slices.Compact(names) {
		old, had := before[n]
		v, has := after[n]
		if had && has && sameValue(old, v) {
			continue
		}
		if !has {
			v = nil
		}
		if err := sc.SetAttribute(n, v); err != nil {
			return workflow.NonRetryable(err)
		}
	}
	return nil
}

// sameValue reports whether two decoded JSON values are equal.
func sameValue(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && sameText(x, y)
}
