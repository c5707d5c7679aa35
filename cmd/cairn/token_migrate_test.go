package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence/dbtest"
)

// token create on a database no cairn migrated says, in its one line, how to migrate it.
func TestTokenCreateOnAnUnmigratedDatabaseSaysHowToMigrate(t *testing.T) {
	t.Parallel()
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			r := runCairn(t, "", cairnEnv(), "token", "create", "--database", dbtest.URL(t, kind), "--name", "ops")
			require.Empty(t, r.stdout, "no token is printed")
			requireOneLineError(t, r, "run cairn migrate up")
		})
	}
}

// The help of the binary names every role a token may have.
func TestHelpNamesEveryTokenRole(t *testing.T) {
	t.Parallel()
	r := runCairn(t, "", cairnEnv(), "-h")
	require.Zero(t, r.code, r.stderr)
	var tokenLine string
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "token ") {
			tokenLine = line
		}
	}
	require.Contains(t, tokenLine, "admin|reader|worker")
}
