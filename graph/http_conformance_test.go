package graph_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// TestGraphQLOverHTTPAudit runs the graphql-http package's server audits (the reference checks
// of the GraphQL-over-HTTP specification) against /graphql with node: no MUST and no SHOULD may
// fail. The audit's package is installed from graph/testdata/graphql-http into a temporary folder
// (skipped when node is missing, except under CI=true).
func TestGraphQLOverHTTPAudit(t *testing.T) {
	t.Parallel()
	node, dir := nodePackage(t, "graphql-http", "audit.mjs")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := setup(t, dbtest.Open(t, persistence.KindSQLite))
	audit := exec.CommandContext(ctx, node, "audit.mjs", b.srv.URL+"/graphql")
	audit.Dir = dir
	out, err := audit.CombinedOutput()
	require.NoError(t, err, "%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var failed struct{ Must, Should int }
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &failed), "%s", out)
	t.Logf("graphql-http audit:\n%s", out)
	require.Zero(t, failed.Must, "%s", out)
	require.Zero(t, failed.Should, "%s", out)
}
