package serverless_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// nestedTries is a document of depth try tasks, each inside the previous one's try list.
func nestedTries(depth int) string {
	var b strings.Builder
	b.WriteString("document: {dsl: '1.0.0', namespace: t, name: deep, version: '1.0.0'}\ndo:\n")
	ind := "  "
	for i := 0; i < depth; i++ {
		fmt.Fprintf(&b, "%s- t%d:\n%s    if: .x\n%s    try:\n", ind, i, ind, ind)
		ind += "      "
	}
	fmt.Fprintf(&b, "%s- leaf: {set: {a: 1}}\n", ind)
	for i := depth - 1; i >= 0; i-- {
		ind = ind[:len(ind)-6]
		fmt.Fprintf(&b, "%s    catch: {retry: {delay: PT1S, limit: {attempt: {count: 2}}}, do: [{c%d: {set: {b: 1}}}]}\n", ind, i)
	}
	return b.String()
}

// TestHostileDocumentsAreRefusedQuickly: schema validation takes time exponential in how deeply
// task lists nest (30 levels ran for minutes), so nesting past MaxDepth is refused before it, at
// the pointer of the list too deep; a document at the limits deploys.
func TestHostileDocumentsAreRefusedQuickly(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		ctx := context.Background()
		start := time.Now()
		_, err := n.engine.Deploy(ctx, nestedTries(30), "")
		var we *workflow.Error
		require.ErrorAs(t, err, &we)
		require.Equal(t, workflow.CodeInvalidInput, we.Code)
		require.True(t, strings.HasSuffix(we.Field, "/t7/try"), we.Field)
		require.Less(t, time.Since(start), 5*time.Second, "a deeply nested document is refused at once")

		res, err := n.engine.Deploy(ctx, nestedTries(serverless.MaxDepth-1), "")
		require.NoError(t, err)
		require.True(t, res.Created)

		var wide strings.Builder
		wide.WriteString("document: {dsl: '1.0.0', namespace: t, name: wide, version: '1.0.0'}\ndo:\n")
		for i := 0; i < serverless.MaxTasks; i++ {
			fmt.Fprintf(&wide, "  - t%d: {if: .x, set: {a: '${ .a + 1 }'}}\n", i)
		}
		_, err = n.engine.Deploy(ctx, wide.String(), "")
		require.NoError(t, err)
		fmt.Fprintf(&wide, "  - onemore: {set: {a: 1}}\n")
		_, err = n.engine.Deploy(ctx, wide.String(), "")
		require.ErrorAs(t, err, &we)
		require.Equal(t, fmt.Sprintf("/do/%d/onemore", serverless.MaxTasks), we.Field)
	})
}
