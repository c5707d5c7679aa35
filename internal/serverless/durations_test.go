package serverless_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// TestDurationsAboveTheMaximumAreRefused: wait: {days: 106752} overflowed and ended at once, and an
// overflowing timeout was refused as "must be longer than zero". Every duration of a document
// longer than serverless.MaxDuration (3650 days) is refused at deploy, at its pointer, with a
// message that names the maximum; one at the maximum deploys.
func TestDurationsAboveTheMaximumAreRefused(t *testing.T) {
	t.Parallel()
	try := func(retry string) string {
		return header + "do:\n  - a:\n      try:\n        - b: {set: {x: 1}}\n      catch: {retry: " + retry + "}\n"
	}
	cases := []struct{ name, doc, field string }{
		{"wait object", header + "do:\n  - a: {wait: {days: 106752}}\n", "/do/0/a/wait"},
		{"wait object of parts", header + "do:\n  - a: {wait: {days: 3650, milliseconds: 1}}\n", "/do/0/a/wait"},
		{"wait ISO", header + "do:\n  - a: {wait: P106752D}\n", "/do/0/a/wait"},
		{"wait ISO hours", header + "do:\n  - a: {wait: PT99999999999999999999H}\n", "/do/0/a/wait"},
		{"task timeout", header + "do:\n  - a: {set: {x: 1}, timeout: {after: {days: 106752}}}\n", "/do/0/a/timeout/after"},
		{"workflow timeout", header + "timeout: {after: P106752D}\ndo:\n  - a: {set: {x: 1}}\n", "/timeout/after"},
		{"named timeout", header + "use:\n  timeouts:\n    long: {after: {hours: 1e12}}\ndo:\n  - a: {set: {x: 1}, timeout: long}\n", "/use/timeouts/long/after"},
		{"retry delay", try("{delay: {days: 106752}, limit: {attempt: {count: 2}}}"), "/do/0/a/catch/retry/delay"},
		{"retry limit", try("{delay: PT1S, limit: {duration: P106752D}}"), "/do/0/a/catch/retry/limit/duration"},
		{"retry jitter", try("{delay: PT1S, jitter: {from: PT1S, to: {days: 106752}}, limit: {attempt: {count: 2}}}"), "/do/0/a/catch/retry/jitter/to"},
		{"named retry", header + "use:\n  retries:\n    slow: {delay: {days: 4000}, limit: {attempt: {count: 2}}}\ndo:\n  - a:\n      try:\n        - b: {set: {x: 1}}\n      catch: {retry: slow}\n", "/use/retries/slow/delay"},
	}
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		for _, tc := range cases {
			_, err := n.engine.Deploy(context.Background(), tc.doc, "")
			var we *workflow.Error
			require.ErrorAs(t, err, &we, tc.name)
			require.Equal(t, workflow.CodeInvalidInput, we.Code, tc.name)
			require.Equal(t, tc.field, we.Field, "%s: %v", tc.name, err)
			require.Equal(t, "the duration is longer than the maximum of 3650 days", we.Message, tc.name)
		}
		defs, err := store.DefinitionList(context.Background(), persistence.DefinitionListParams{})
		require.NoError(t, err)
		require.Empty(t, defs, "a refused document stores nothing")
		n.deploy(t, "document: {dsl: '1.0.0', namespace: test, name: longest, version: '1.0.0'}\ntimeout: {after: P3650D}\ndo:\n  - a: {wait: {days: 3650}}\n")
	})
}
