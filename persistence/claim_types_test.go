package persistence_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// A claim of several types takes the first due workflows of those types in claim order
// (priority, then next activation, then ID) whatever their type, as one claim over all of them
// would; the workflows of other types, other groups or not yet due stay as they were, and so do
// the due ones of its types past its limit.
func TestClaimOfSeveralTypesTakesThemInClaimOrder(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		now := persistence.Now()
		exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Minute})
		require.NoError(t, err)
		at := func(s int) *time.Time { v := now.Add(time.Duration(s) * time.Second); return &v }
		var wfs []*persistence.Workflow
		add := func(typ string, priority int, due *time.Time) *persistence.Workflow {
			w := newWorkflow(typ, persistence.StatusCreated, due)
			w.Priority = priority
			wfs = append(wfs, w)
			return w
		}
		// Claim order among a, b and c: priority first, then the earliest due, then the ID.
		b1 := add("b", 5, at(-10))
		a1 := add("a", 1, at(-50))
		c1 := add("c", 1, at(-40))
		a2 := add("a", 1, at(-30))
		b2 := add("b", 1, at(-30)) // due as a2, inserted after it
		a3 := add("a", 0, at(-60))
		c2 := add("c", 0, at(-5))
		// Never claimed here: another type first in claim order, one not due, one of another group.
		for range 20 {
			add("x", 9, at(-100))
		}
		add("a", 9, at(60))
		add("b", 9, at(-100)).ExecutorGroup = "other"
		require.NoError(t, store.WorkflowInsertMany(ctx, wfs))
		want := []int64{b1.ID, a1.ID, c1.ID, a2.ID, b2.ID, a3.ID, c2.ID}

		claim := func(limit int) []int64 {
			got, err := store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: limit,
				Now: now, StepDeadline: now.Add(time.Minute), Types: []string{"a", "b", "c", "d"}})
			require.NoError(t, err)
			ids := make([]int64, len(got))
			for i, w := range got {
				require.Equal(t, persistence.StatusExecuting, w.Status)
				require.Equal(t, exec.ID, *w.ExecutorID)
				ids[i] = w.ID
			}
			slices.Sort(ids)
			return ids
		}
		sorted := func(ids ...int64) []int64 { return slices.Sorted(slices.Values(ids)) }
		require.Equal(t, sorted(want[:4]...), claim(4), "the first four in claim order")
		for _, w := range wfs {
			if slices.Contains(want[:4], w.ID) {
				continue
			}
			stored, err := store.WorkflowGet(ctx, w.ID)
			require.NoError(t, err)
			require.Equal(t, persistence.StatusCreated, stored.Status, "workflow %d (%s) is left as it was", w.ID, w.Type)
			require.Nil(t, stored.ExecutorID)
			require.Equal(t, w.Version, stored.Version)
		}
		require.Equal(t, sorted(want[4:]...), claim(10), "then the rest of a, b and c, and nothing else")
		require.Empty(t, claim(10))
	})
}

// On PostgreSQL, a claim of several types reads each type's due workflows from the due index by a
// probe of its own: 30,000 due workflows of a type it does not take (a flow-controlled type's held
// backlog), first in claim order, are not read. Read through, they made each claim of the other
// types take up to 165 ms, and the claims of newly freed keys waited behind it.
func TestClaimOfSeveralTypesSkipsOtherTypesBacklog(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, persistence.KindPostgres)
	ctx := context.Background()
	exec, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "h", PID: 1, Group: "default", Expiry: time.Minute})
	require.NoError(t, err)
	analyzeEndedOnly(t, store, "plain") // statistics that tell of no backlog
	_, err = store.DB().ExecContext(ctx, `INSERT INTO workflows (type, definition_version, status, state, next_activation,
		executor_group, created, modified, concurrency_key)
		SELECT CASE WHEN i <= 30000 THEN 'held' ELSE 'plain' END, 1, 'CREATED', 'run',
			now() - interval '1 hour' + (i || ' ms')::interval, 'default', now(), now(), CASE WHEN i <= 30000 THEN 'k' END
		FROM generate_series(1, 30010) i`)
	require.NoError(t, err)
	now := persistence.Now()
	query, args := store.ClaimForTest(persistence.WorkflowClaimParams{ExecutorID: exec.ID, Group: "default", Limit: 100, Now: now,
		StepDeadline: now.Add(time.Minute), Types: []string{"plain", "other", "demo.order"}})
	root, plan := explainAnalyze(t, store, query, args)
	require.Equal(t, float64(10), root["Actual Rows"], "the 10 due workflows of plain are claimed")
	// Three probes of the index and the 10 rows claimed (their heap pages, their index entries):
	// well under 300 pages, where reading through the held backlog takes about 870.
	pages := root["Shared Hit Blocks"].(float64) + root["Shared Read Blocks"].(float64)
	require.Less(t, pages, 300.0, plan)
}
