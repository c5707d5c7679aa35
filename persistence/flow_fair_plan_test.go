package persistence_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// On PostgreSQL, a fair flow claim reads each key's oldest due workflow by the first rows of an
// index in claim order (workflows_flow_due_idx, or the due index for a key holding most of the
// queue), after ANALYZE, never by sorting the key's queue.
func TestFlowKeyHeadsReadTheIndexInClaimOrder(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, persistence.KindPostgres)
	ctx := context.Background()
	_, err := store.DB().ExecContext(ctx, `INSERT INTO workflows (type, definition_version, status, state, next_activation,
		executor_group, created, modified, concurrency_key)
		SELECT 'flow.plan', 1, 'CREATED', 'run', now() - interval '1 hour' + (i || ' ms')::interval, 'default', now(), now(),
			CASE WHEN i <= 20000 THEN 'long' ELSE 'k' || (i % 500) END
		FROM generate_series(1, 30000) i`)
	require.NoError(t, err)
	_, err = store.DB().ExecContext(ctx, "ANALYZE workflows")
	require.NoError(t, err)
	query, args := persistence.KeyHeadsForTest(persistence.WorkflowClaimParams{Group: "default"}, persistence.FlowSpec{Type: "flow.plan"},
		persistence.KeyHeadsForTestOf("long", "k7"), persistence.Now())
	var plan []string
	require.NoError(t, store.DB().NewRaw("EXPLAIN "+query, args...).Scan(ctx, &plan))
	text := strings.Join(plan, "\n")
	require.Contains(t, text, "workflows_flow_due_idx", text)
	require.NotContains(t, text, "Sort", text)
	require.NotContains(t, text, "Bitmap", text)
}

// On PostgreSQL, the completion that hands 100 keys' slots on counts each key's holders with one
// short probe of workflows_flow_holders_idx, not a walk of every holder of the type per key: with
// 3,000 holders over 1,000 keys, a few index pages a key (the index's root and a leaf).
func TestFlowHandoffCountsEachKeysHoldersByItsKey(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, persistence.KindPostgres)
	ctx := context.Background()
	_, err := store.DB().ExecContext(ctx, `INSERT INTO workflows (type, definition_version, status, state, next_activation,
		executor_group, created, modified, concurrency_key)
		SELECT 'flow.handoff', 1, CASE WHEN i <= 3000 THEN 'EXECUTING' ELSE 'CREATED' END, 'run',
			now() - interval '1 hour' + (i || ' ms')::interval, 'default', now(), now(), 'k' || (i % 1000)
		FROM generate_series(1, 6000) i`)
	require.NoError(t, err)
	_, err = store.DB().ExecContext(ctx, "VACUUM ANALYZE workflows")
	require.NoError(t, err)
	keys, freed := make([]string, 100), map[string]int{}
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i*10)
		freed[keys[i]] = 1
	}
	query, args := store.HandoffForTest(persistence.WorkflowClaimParams{Group: "default", Limit: 100, Now: persistence.Now()},
		persistence.FlowSpec{Type: "flow.handoff", Concurrency: 10}, keys, freed)
	root, plan := explainAnalyze(t, store, query, args)
	var probe map[string]any
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		if n["Index Name"] == "workflows_flow_holders_idx" {
			probe = n
		}
		children, _ := n["Plans"].([]any)
		for _, c := range children {
			walk(c.(map[string]any))
		}
	}
	walk(map[string]any{"Plans": []any{root}})
	require.NotNil(t, probe, "the holders are counted from workflows_flow_holders_idx: %s", plan)
	loops, hits, fetches := probe["Actual Loops"].(float64), probe["Shared Hit Blocks"].(float64), probe["Heap Fetches"].(float64)
	require.Equal(t, float64(100), loops, "one count per key")
	// The index's own pages: a heap fetch reads a page of the table for a holder whose page is not
	// yet all-visible (VACUUM cannot mark it while another test's transaction is open).
	require.LessOrEqual(t, (hits-fetches)/loops, 3.0, "index pages read per key's count: %v", probe)
}

// On PostgreSQL, a key walk finds each next key with one short probe of workflows_flow_due_idx,
// also when the statistics were taken before the type had any waiting workflow: the first probe,
// bounded by a constant, was then planned as an aggregate over every key after it and read the
// whole backlog (here about 27,000 index entries, where a probe reads a few pages).
func TestFlowKeyWalkProbesEachKeyWithStaleStatistics(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, persistence.KindPostgres)
	ctx := context.Background()
	analyzeEndedOnly(t, store, "flow.other")
	_, err := store.DB().ExecContext(ctx, `INSERT INTO workflows (type, definition_version, status, state, next_activation,
		executor_group, created, modified, concurrency_key)
		SELECT 'flow.walk', 1, 'CREATED', 'run', now(), 'default', now(), now(), 'k' || (i % 1000)
		FROM generate_series(1, 30000) i`)
	require.NoError(t, err)
	query, args := persistence.KeysAfterForTest("flow.walk", "k184", 64)
	root, plan := explainAnalyze(t, store, query, args)
	require.Equal(t, float64(64), root["Actual Rows"], "64 keys walked")
	// A probe reads the index's root, an inner page, a leaf and the heap page of the row it
	// returns (the new rows are not yet all-visible): 64 probes, well under 1,000 pages.
	require.Less(t, root["Shared Hit Blocks"].(float64)+root["Shared Read Blocks"].(float64), 1000.0, plan)
}

// On PostgreSQL, a key walk reads each next key from workflows_flow_due_idx in key order whatever
// the statistics. Taken when the table held the ended workflows of a drain and ten queued, the
// index the pages of an earlier, larger backlog, and the table then refilled with as many queued
// (its row count what they say), they made an index probe look dearer than reading the table:
// each probe scanned the table and sorted it (4 s a walk of 512 keys over 20,000 queued).
func TestFlowKeyWalkReadsTheIndexInOrderWhateverTheStatistics(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, persistence.KindPostgres)
	ctx := context.Background()
	exec := func(query string, args ...any) {
		_, err := store.DB().ExecContext(ctx, query, args...)
		require.NoError(t, err, query)
	}
	fill := func(n int, status string) {
		exec(`INSERT INTO workflows (type, definition_version, status, state, next_activation, executor_group, created, modified,
			concurrency_key) SELECT 'flow.walk', 1, CASE WHEN i <= 10 THEN 'CREATED' ELSE ? END, 'run', now(), 'default', now(), now(),
			'k' || (i % 1000) FROM generate_series(1, ?) i`, status, n)
	}
	fill(100000, "CREATED") // the earlier backlog: the index keeps its pages
	exec("DELETE FROM workflows")
	exec("VACUUM workflows")
	fill(20000, "FINISHED")
	exec("ANALYZE workflows")
	exec("DELETE FROM workflows")
	fill(20000, "CREATED")
	for _, after := range []string{"", "k184"} {
		walked := readsDuring(t, store, "workflows", func(_ *persistence.Store, tx bun.Tx) {
			keys, err := persistence.FlowKeysAfterForTest(ctx, store, tx, "flow.walk", after, 64)
			require.NoError(t, err)
			require.Len(t, keys, 64)
		})
		require.Zero(t, walked.SeqScans, "walk from %q: no scan of the table", after)
		// A probe fetches at most the row of the key it finds: 64 probes, not the backlog.
		require.Less(t, walked.Rows, int64(1000), "walk from %q: rows read", after)
	}
}

// On SQLite, a fair flow claim reads each key's oldest due workflows from workflows_flow_due_idx
// (by type and key), never through the due index (by group and type), where a key's head lies
// behind every due workflow of the type's other keys: with 100,000 queued under one key, the
// first step of another key's new workflow waited 600 ms (p99), and the drain halved.
func TestFlowKeyHeadsReadTheKeysOwnQueueOnSQLite(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, persistence.KindSQLite)
	ctx := context.Background()
	_, err := store.DB().ExecContext(ctx, `WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 5000)
		INSERT INTO workflows (type, definition_version, status, state, next_activation, executor_group, created, modified, concurrency_key)
		SELECT 'flow.plan', 1, 'CREATED', 'run', ?, 'default', ?, ?, CASE WHEN n <= 4900 THEN 'long' ELSE 'k' || (n % 50) END FROM i`,
		persistence.Now(), persistence.Now(), persistence.Now())
	require.NoError(t, err)
	_, err = store.DB().ExecContext(ctx, "ANALYZE")
	require.NoError(t, err)
	query, args := persistence.KeyHeadsUnionForTest(persistence.WorkflowClaimParams{Group: "default"}, persistence.FlowSpec{Type: "flow.plan"},
		persistence.KeyHeadsForTestOf("long", "k7"), persistence.Now(), false)
	var searches []string
	for _, row := range explainRows(t, store, query, args...) {
		if d := row["detail"]; strings.HasPrefix(d, "SEARCH workflows") || strings.HasPrefix(d, "SCAN workflows") {
			searches = append(searches, d)
		}
	}
	require.Len(t, searches, 2, "one probe a key: %v", searches)
	for _, d := range searches {
		require.Contains(t, d, "USING INDEX workflows_flow_due_idx (type=? AND concurrency_key=?)", d)
	}
}

// On SQLite and MariaDB, the one oldest due workflow of each of many keys (a slot handed on under
// a limit of 1) is read by one statement whatever the number of keys, one probe of the keys' index
// a key (SQLite: workflows_flow_due_idx; MariaDB: workflows_flow_heads_idx, no sort): a UNION ALL
// of a probe a key cost more to prepare and plan than to run.
func TestFlowKeyHeadsOfManyKeysInOneStatement(t *testing.T) {
	t.Parallel()
	dbtest.ForKinds(t, []persistence.Kind{persistence.KindSQLite, persistence.KindMySQL}, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		now := persistence.Now()
		mariaDB := store.Kind() == persistence.KindMySQL
		if mariaDB {
			fillOnMariaDB(t, store, now, "flow.plan", `CASE WHEN n <= 300 THEN 'FINISHED' ELSE 'CREATED' END`,
				`CASE WHEN n <= 300 THEN NULL ELSE ? END`, `CONCAT('k', n % 300)`)
		} else {
			_, err := store.DB().ExecContext(ctx, `WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 3000)
					INSERT INTO workflows (type, definition_version, status, state, next_activation, executor_group, created, modified, concurrency_key)
					SELECT 'flow.plan', 1, CASE WHEN n <= 300 THEN 'FINISHED' ELSE 'CREATED' END, 'run', ?, 'default', ?, ?, 'k' || (n % 300) FROM i`,
				now.Add(-time.Hour), now, now)
			require.NoError(t, err)
			_, err = store.DB().ExecContext(ctx, "ANALYZE")
			require.NoError(t, err)
		}
		keys := make([]string, 300)
		for i := range keys {
			keys[i] = fmt.Sprintf("k%d", i)
		}
		query, args := persistence.KeyHeadsOfOnesForTest(persistence.WorkflowClaimParams{Group: "default"},
			persistence.FlowSpec{Type: "flow.plan"}, keys, now.Add(time.Second), mariaDB)
		if mariaDB {
			var probes []map[string]string
			for _, row := range explainRows(t, store, query, args...) {
				if row["table"] == "workflows" && row["key"] != "PRIMARY" {
					probes = append(probes, row)
				}
			}
			require.Len(t, probes, 1, "one probe, run for each key: %v", probes)
			require.Equal(t, "workflows_flow_heads_idx", probes[0]["key"], "%v", probes[0])
			require.NotContains(t, probes[0]["Extra"], "filesort", "%v", probes[0])
		} else {
			var probes []string
			for _, row := range explainRows(t, store, query, args...) {
				d := row["detail"]
				if strings.HasPrefix(d, "SCAN workflows") || (strings.HasPrefix(d, "SEARCH workflows") && !strings.Contains(d, "PRIMARY KEY")) {
					probes = append(probes, d)
				}
			}
			require.Equal(t, []string{"SEARCH workflows USING INDEX workflows_flow_due_idx (type=? AND concurrency_key=?)"}, probes)
		}
		type head struct {
			Key string `bun:"concurrency_key"`
			ID  int64  `bun:"id"`
		}
		var heads, oldest []head
		require.NoError(t, store.DB().NewRaw(query, args...).Scan(ctx, &heads))
		require.NoError(t, store.DB().NewRaw(`SELECT concurrency_key, min(id) AS id FROM workflows WHERE status = 'CREATED'
			GROUP BY concurrency_key`).Scan(ctx, &oldest))
		require.Len(t, oldest, 300)
		require.ElementsMatch(t, oldest, heads, "each key's oldest queued workflow")
	})
}

// On MariaDB (no partial indexes), a fair flow claim reads each key's oldest due workflows from
// workflows_flow_heads_idx (type, key, claim group, claim order): a few rows in order, never the
// key's every workflow sorted. With 20,000 queued under one key, each probe of it read all 20,000
// (41 s of 1,203 probes in a run of 20,000) and a new key's first step waited 1.7-3 s (p99).
func TestFlowKeyHeadsReadTheKeysOwnQueueOnMariaDB(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, persistence.KindMySQL)
	now := persistence.Now()
	fillOnMariaDB(t, store, now, "flow.plan",
		`CASE WHEN n % 3 = 0 THEN 'FINISHED' ELSE 'CREATED' END`,
		`?`,
		`CASE WHEN n <= 4900 THEN 'long' ELSE CONCAT('k', n % 50) END`)
	query, args := persistence.KeyHeadsUnionForTest(persistence.WorkflowClaimParams{Group: "default"}, persistence.FlowSpec{Type: "flow.plan"},
		persistence.KeyHeadsForTestOf("long", "k7"), now, true)
	var probes []map[string]string
	for _, row := range explainRows(t, store, query, args...) {
		if row["table"] == "workflows" {
			probes = append(probes, row)
		}
	}
	require.Len(t, probes, 2, "one probe a key")
	for _, row := range probes {
		require.Equal(t, "workflows_flow_heads_idx", row["key"], "%v", row)
		require.NotContains(t, row["Extra"], "filesort", "%v", row)
	}
}

// analyzeEndedOnly takes the statistics of workflows while the table holds only 2,000 ended ones
// of typ, as on a young database before autovacuum comes by: they tell of no backlog at all,
// whatever the test adds next.
func analyzeEndedOnly(t *testing.T, store *persistence.Store, typ string) {
	t.Helper()
	ctx := context.Background()
	_, err := store.DB().ExecContext(ctx, `INSERT INTO workflows (type, definition_version, status, state, executor_group,
		created, modified) SELECT ?, 1, 'FINISHED', 'done', 'default', now(), now() FROM generate_series(1, 2000)`, typ)
	require.NoError(t, err)
	_, err = store.DB().ExecContext(ctx, "ANALYZE workflows")
	require.NoError(t, err)
}

// explainAnalyze runs query under EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) on PostgreSQL, in a
// transaction it rolls back (an explained UPDATE runs: nothing of it stays), and returns the
// plan's root node and the plan as text.
func explainAnalyze(t *testing.T, store *persistence.Store, query string, args []any) (map[string]any, string) {
	t.Helper()
	ctx := context.Background()
	tx, err := store.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	var plan []string
	if strings.Contains(query, "$1") { // its values bound as parameters, as it runs
		var one string
		require.NoError(t, tx.Tx.QueryRowContext(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+query, args...).Scan(&one))
		plan = []string{one}
	} else {
		require.NoError(t, tx.NewRaw("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+query, args...).Scan(ctx, &plan))
	}
	text := strings.Join(plan, "")
	var nodes []map[string]any
	require.NoError(t, json.Unmarshal([]byte(text), &nodes))
	return nodes[0]["Plan"].(map[string]any), text
}

// On MariaDB (no partial indexes), a flow claim counts a type's holders from
// workflows_flow_holder_idx: the holders' entries alone. It read them from workflows_flow_idx
// (type, key, status), every keyed workflow of the type, so with 50,000 queued under one key each
// claim read 50,000 entries and a new key's first step waited 0.3-0.9 s (p99).
func TestFlowHoldersAreCountedFromTheHoldersAloneOnMariaDB(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, persistence.KindMySQL)
	ctx := context.Background()
	now := persistence.Now()
	fillOnMariaDB(t, store, now, "flow.holders",
		`CASE WHEN n <= 3 THEN 'IN_PROGRESS' WHEN n = 4 THEN 'WAITING' ELSE 'CREATED' END`,
		`?`,
		`CASE WHEN n <= 4990 THEN 'long' ELSE CONCAT('k', n % 5) END`)
	for _, named := range [][]string{nil, {"long", "k1"}} {
		query, args := persistence.FlowHoldersQueryForTest(persistence.KindMySQL, persistence.FlowSpec{Type: "flow.holders", Concurrency: 1}, named)
		var counts []struct {
			Key string `bun:"concurrency_key"`
			N   int    `bun:"n"`
		}
		require.NoError(t, store.DB().NewRaw(query, args...).Scan(ctx, &counts))
		require.Equal(t, []struct {
			Key string `bun:"concurrency_key"`
			N   int    `bun:"n"`
		}{{"long", 4}}, counts)
		for _, row := range analyzeOnMariaDB(t, store, query, args) {
			require.LessOrEqual(t, *row.RRows, 10.0, "the holders alone (%v): %+v", named, row)
		}
	}
}

// On MariaDB, a flow claim's candidates are read from workflows_due_idx (claim group, type, claim
// order): the rows it asks for, in order (here the newest workflows are due first). Without
// claim_group named it read the type's workflows from workflows_flow_idx and sorted them: 50,000
// rows for each claim of 200 under one deep key.
func TestFlowCandidatesReadTheDueIndexInOrderOnMariaDB(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, persistence.KindMySQL)
	ctx := context.Background()
	now := persistence.Now()
	ex, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "plan", PID: 1, Group: "default", Expiry: time.Minute})
	require.NoError(t, err)
	fillOnMariaDB(t, store, now, "flow.cands",
		`'CREATED'`,
		`DATE_SUB(?, INTERVAL n SECOND)`,
		`'long'`)
	query, args := persistence.FlowCandidatesQueryForTest(persistence.KindMySQL, "",
		persistence.WorkflowClaimParams{Group: "default", ExecutorID: ex.ID}, persistence.FlowSpec{Type: "flow.cands", Concurrency: 50},
		map[string]int{}, 200, now.Add(time.Second))
	for _, row := range analyzeOnMariaDB(t, store, query, args) {
		require.NotNil(t, row.Key, "%+v", row)
		require.Equal(t, "workflows_due_idx", *row.Key, "%+v", row)
		require.LessOrEqual(t, *row.RRows, 250.0, "the rows asked for: %+v", row)
		require.True(t, row.Extra == nil || !strings.Contains(*row.Extra, "filesort"), "in order: %s", *row.Extra)
	}
}

// A flow claim under a concurrency limit whose workflows queue reads four limits' worth of
// candidates and its holders' number, not four claim batches: the oldest due workflows may all be
// one key's, and a claim of 2,000 read (and on MariaDB locked) 8,000 of one key's queue for the 50
// it could start. Under the strategies that cancel, every candidate may matter.
func TestFlowClaimReadsWhatItsLimitCanTake(t *testing.T) {
	p := persistence.WorkflowClaimParams{Limit: 2000}
	queue := persistence.FlowSpec{Type: "t", Concurrency: 50}
	require.Equal(t, 250, persistence.FlowCandidateLimitForTest(p, queue, map[string]int{"k0": 40, "k1": 10}))
	require.Equal(t, 64, persistence.FlowCandidateLimitForTest(p, persistence.FlowSpec{Type: "t", Concurrency: 1}, nil))
	require.Equal(t, 8000, persistence.FlowCandidateLimitForTest(p, persistence.FlowSpec{Type: "t", Concurrency: 50, CancelNewest: true}, nil))
	require.Equal(t, 8000, persistence.FlowCandidateLimitForTest(p, persistence.FlowSpec{Type: "t", RateLimit: 10}, nil))
	require.Equal(t, 100, persistence.FlowCandidateLimitForTest(persistence.WorkflowClaimParams{Limit: 25}, queue, nil))
}

// On MariaDB, a key walk seeks from each key to the next, reading neither a key's queue nor its
// ended workflows. As one recursive statement it read workflows_flow_heads_idx, where a key's
// ended workflows come first: each walk read every ended workflow of the first key it met, 90,000
// in a run of 100,000 under one key, where a new key's first step waited up to 0.3 s (p99).
func TestFlowKeyWalkSeeksPastADeepKeyOnMariaDB(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, persistence.KindMySQL)
	ctx := context.Background()
	now := persistence.Now()
	fillOnMariaDB(t, store, now, "flow.walk",
		`CASE WHEN n <= 1000 THEN 'FINISHED' ELSE 'CREATED' END`,
		`CASE WHEN n <= 1000 THEN NULL ELSE ? END`,
		`CASE WHEN n <= 4950 THEN 'a-long' ELSE CONCAT('k', n % 10) END`)
	conn, err := store.DB().Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(ctx, "FLUSH STATUS")
	require.NoError(t, err)
	keys, err := persistence.FlowKeysAfterForTest(ctx, store, conn, "flow.walk", "", 64)
	require.NoError(t, err)
	require.Equal(t, []string{"a-long", "k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9"}, keys)
	var reads []struct {
		Name  string `bun:"Variable_name"`
		Value int    `bun:"Value"`
	}
	require.NoError(t, conn.NewRaw("SHOW SESSION STATUS LIKE 'Handler_read_next'").Scan(ctx, &reads))
	require.Len(t, reads, 1)
	// A seek a key and a few steps from each: nowhere near a-long's 1,000 ended or 3,950 queued.
	require.Less(t, reads[0].Value, 500, "index entries read")
}

// fillOnMariaDB inserts 5,000 workflows of typ on MariaDB, numbered n from 1, whose status,
// next activation and concurrency key are the given SQL expressions of n (next may use ? for
// now), then takes the table's statistics.
func fillOnMariaDB(t *testing.T, store *persistence.Store, now time.Time, typ, status, next, key string) {
	t.Helper()
	ctx := context.Background()
	_, err := store.DB().ExecContext(ctx, `INSERT INTO workflows (type, definition_version, status, state, next_activation, executor_group,
		created, modified, concurrency_key, input, variables)
		WITH RECURSIVE d(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM d WHERE n < 99),
			i(n) AS (SELECT a.n * 100 + b.n + 1 FROM d AS a CROSS JOIN d AS b WHERE a.n < 50)
		SELECT ?, 1, `+status+`, 'run', `+next+`, 'default', ?, ?, `+key+`, '{}', '{}' FROM i`,
		append(append([]any{typ}, nowArgs(next, now)...), now, now)...)
	require.NoError(t, err)
	_, err = store.DB().ExecContext(ctx, "ANALYZE TABLE workflows")
	require.NoError(t, err)
}

// nowArgs is now once for each ? in expr.
func nowArgs(expr string, now time.Time) []any {
	args := make([]any, strings.Count(expr, "?"))
	for i := range args {
		args[i] = now
	}
	return args
}

// analyzedRow is a row of MariaDB's ANALYZE of a statement (which runs it): the table, the index
// read, the rows it gave and the notes.
type analyzedRow struct {
	Table string   `bun:"table"`
	Key   *string  `bun:"key"`
	RRows *float64 `bun:"r_rows"`
	Extra *string  `bun:"Extra"`
}

// analyzeOnMariaDB runs query with MariaDB's ANALYZE and returns its rows for workflows (at least
// one).
func analyzeOnMariaDB(t *testing.T, store *persistence.Store, query string, args []any) []analyzedRow {
	t.Helper()
	var plan, out []analyzedRow
	require.NoError(t, store.DB().NewRaw("ANALYZE "+query, args...).Scan(context.Background(), &plan))
	for _, row := range plan {
		if row.Table == "workflows" {
			require.NotNil(t, row.RRows, "%+v", row)
			out = append(out, row)
		}
	}
	require.NotEmpty(t, out, "%+v", plan)
	return out
}
