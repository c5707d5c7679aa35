package persistence_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// Each database says what it can do; code outside the dialects decides by these, not by its kind.
func TestCapabilitiesOfEachDatabase(t *testing.T) {
	t.Parallel()
	want := map[persistence.Kind]persistence.Capabilities{
		persistence.KindPostgres: {SkipLocked: true, Listen: true, Returning: true, Estimates: true},
		persistence.KindSQLite:   {SingleWriter: true, Returning: true},
		persistence.KindMySQL:    {SkipLocked: true},
	}
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		require.Equal(t, want[store.Kind()], store.Capabilities())
	})
}
