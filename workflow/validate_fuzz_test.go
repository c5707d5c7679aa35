package workflow_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/workflow"
)

// FuzzCheckJSON: CheckJSON refuses, as INVALID_INPUT naming its field, every JSON text with a NUL
// character in a string or key (which PostgreSQL's jsonb cannot store), and passes every text
// encoding/json writes for values without one.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"k":"a\u0000b"}`, `{"k":"a\\u0000b"}`, `{"\u0000":1}`, `"\ud83d\ude00"`, `"\ud83d"`,
		`"\ude00\ud83d"`, `["\\", "\u0000"]`, `"\u00e9\ud800\udc00"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		err := workflow.CheckJSON("input", raw)
		if err != nil {
			we, ok := err.(*workflow.Error)
			require.True(t, ok)
			require.Equal(t, workflow.CodeInvalidInput, we.Code)
			require.Equal(t, "input", we.Field)
		}
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return
		}
		nul := holdsNUL(v)
		if nul {
			require.Error(t, err, "a NUL in %q", raw)
		}
		again, mErr := json.Marshal(v)
		require.NoError(t, mErr)
		require.Equal(t, nul, workflow.CheckJSON("input", again) != nil, "%q", again)
	})
}

// holdsNUL reports whether a decoded JSON value has a NUL character in a string or key.
func holdsNUL(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.IndexByte(v, 0) >= 0
	case []any:
		for _, e := range v {
			if holdsNUL(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if strings.IndexByte(k, 0) >= 0 || holdsNUL(e) {
				return true
			}
		}
	}
	return false
}
