package pool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// statementLog records the statements a Store sends while it is on (a pgx query tracer).
type statementLog struct {
	mu    sync.Mutex
	on    bool
	stmts map[string][][]any // SQL text to the arguments of its first runs
	order []string
	// local is what SET LOCAL set on each connection in its open transaction; settings, what was
	// set when a statement ran, so that EXPLAIN plans it as the engine's transaction did.
	local    map[*pgx.Conn]string
	settings map[string]string
}

func (l *statementLog) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	head := strings.ToUpper(strings.TrimSpace(data.SQL))
	switch {
	case strings.HasPrefix(head, "SET LOCAL") && strings.Contains(head, "TO DEFAULT"),
		head == "COMMIT", head == "ROLLBACK", strings.HasPrefix(head, "BEGIN"):
		delete(l.local, conn)
	case strings.HasPrefix(head, "SET LOCAL"):
		l.local[conn] = data.SQL
	}
	if !l.on {
		return ctx
	}
	if _, seen := l.stmts[data.SQL]; !seen {
		l.order = append(l.order, data.SQL)
		l.settings[data.SQL] = l.local[conn]
	}
	// The first runs, and the run with the most rows in its arrays (a batch's size is what a
	// planner that trusts stale statistics gets wrong).
	runs := l.stmts[data.SQL]
	switch {
	case len(runs) < 3:
		l.stmts[data.SQL] = append(runs, data.Args)
	case batchSize(data.Args) > batchSize(runs[2]):
		runs[2] = data.Args
	}
	return ctx
}

// batchSize is the length of the longest slice among a statement's arguments.
func batchSize(args []any) int {
	n := 0
	for _, a := range args {
		if v := reflect.ValueOf(a); v.Kind() == reflect.Slice && v.Type().Elem().Kind() != reflect.Uint8 {
			n = max(n, v.Len())
		}
	}
	return n
}

func (l *statementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (l *statementLog) setOn(on bool) {
	l.mu.Lock()
	l.on = on
	l.mu.Unlock()
}

// storedTables hold a row or more per workflow or step ever run: a statement that scans one of them
// costs more the longer cairn runs.
var storedTables = map[string]bool{"workflows": true, "actions": true, "task_instances": true, "action_variables": true,
	"side_effects": true, "activity_logs": true, "signals": true, "change_events": true, "form_submissions": true, "idempotency_keys": true}

// partitionSuffix ends the name of a partition of a partitioned history table.
var partitionSuffix = regexp.MustCompile(`_(p\d{8}|default)$`)

// parentTable returns the table a partition belongs to (a table's own name otherwise).
func parentTable(rel string) string {
	if parent := partitionSuffix.ReplaceAllString(rel, ""); storedTables[parent] {
		return parent
	}
	return rel
}

// planFaults returns what in an EXPLAIN (FORMAT JSON) plan makes a statement's cost grow with the
// rows stored or claimed: a sequential scan of a stored table (unless seqScans is false), a nested
// loop whose join condition is checked only after the rows are fetched (every pair), and a batch
// (unnest, or the rows of an update gathered into an array) joined to workflows through anything
// but their primary key or their addresses (a claim's probe of each type's due rows aside).
func planFaults(sql string, plan any, seqScans bool) []string {
	var faults []string
	// A batch: an unnest of values, or rows a subquery gathered into an array for an update.
	batch := strings.Contains(sql, "unnest(") || strings.Contains(sql, "= ANY(ARRAY(")
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		rel, _ := n["Relation Name"].(string)
		rel = parentTable(rel)
		typ, _ := n["Node Type"].(string)
		index, _ := n["Index Name"].(string)
		switch {
		case typ == "Seq Scan" && storedTables[rel] && seqScans:
			faults = append(faults, "sequential scan of "+rel)
		case typ == "Nested Loop" && n["Join Filter"] != nil:
			// A hash or merge join checks its filter only on the pairs its condition matched.
			faults = append(faults, fmt.Sprintf("join filter %v", n["Join Filter"]))
		case batch && rel == "workflows" && strings.Contains(typ, "Index") && index != "workflows_pkey" && !strings.HasPrefix(sql, "INSERT") &&
			!typeProbe(index, n["Index Cond"]):
			faults = append(faults, "a batch joined to workflows through "+index)
		}
		for _, child := range asList(n["Plans"]) {
			walk(child)
		}
	}
	for _, top := range asList(plan) {
		if p, ok := top["Plan"].(map[string]any); ok {
			walk(p)
		}
	}
	return faults
}

// typeProbe tells whether an index scan is a claim's probe of one type's due workflows: the due
// index searched by group and type (a claim of several types runs one per type, from an unnest),
// bounded by the claim's limit.
func typeProbe(index string, cond any) bool {
	c, _ := cond.(string)
	return index == "workflows_due_idx" && strings.Contains(c, "(executor_group = ") && strings.Contains(c, "(type = ")
}

func asList(v any) []map[string]any {
	var out []map[string]any
	list, _ := v.([]any)
	for _, x := range list {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// preloadHistory fills a PostgreSQL schema with ended workflows and their history and ANALYZEs
// it, then adds workflows that a live node of another process holds: the statistics are those of
// a quiet moment (when autovacuum tends to run), the rows those of a busy one. Autovacuum is off
// for these tables, so that the test decides when statistics are taken.
func preloadHistory(t *testing.T, store *persistence.Store, ended, held int) {
	t.Helper()
	ctx := context.Background()
	var stmts []string
	for table := range storedTables {
		stmts = append(stmts, "ALTER TABLE "+table+" SET (autovacuum_enabled = false)")
	}
	for _, q := range append(stmts,
		fmt.Sprintf(`INSERT INTO workflows (type, definition_version, status, state, executor_group, input, variables, created, modified, started, finished, version)
			SELECT 'demo.order', 1, 'FINISHED', 'done', 'default', '{}', '{"chargeId": "c"}', now() - interval '1 day', now() - interval '1 day',
				now() - interval '1 day', now() - interval '1 day', 5 FROM generate_series(1, %d)`, ended),
		`INSERT INTO task_instances (workflow_id, state, task_type, attempt, status, executor_id, host, started, finished)
			SELECT w.id, s.state, 'handler', 1, 'SUCCEEDED', 1, 'h', w.created, w.finished FROM workflows w, unnest(ARRAY['validate', 'charge', 'ship']) AS s(state)
			WHERE w.status = 'FINISHED'`,
		`INSERT INTO actions (workflow_id, type, from_state, state, retry_no, executor_id, task_instance_id, at)
			SELECT t.workflow_id, 'STATE_EXECUTION', t.state, t.state, 0, 1, t.id, t.finished FROM task_instances t`,
		`INSERT INTO action_variables (workflow_id, action_id, key, value) SELECT a.workflow_id, a.id, 'k', '1' FROM actions a`,
		`INSERT INTO side_effects (workflow_id, key, value_type, value, created) SELECT id, 'chargeId', 'string', '"c"', created FROM workflows`,
		`INSERT INTO activity_logs (workflow_id, task_instance_id, name, value, at) SELECT t.workflow_id, t.id, 'n', 'v', t.finished FROM task_instances t`,
		`INSERT INTO signals (workflow_id, name, payload, created, consumed) SELECT id, 'approve', '{}', created, created FROM workflows WHERE status = 'FINISHED'`,
		`INSERT INTO change_events (workflow_id, type, status, state, at) SELECT a.workflow_id, a.type, 'IN_PROGRESS', a.state, a.at FROM actions a`,
		`ANALYZE`,
	) {
		_, err := store.DB().ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	holdWorkflows(t, store, held)
}

// holdWorkflows adds workflows that a live node of another process holds.
func holdWorkflows(t *testing.T, store *persistence.Store, held int) {
	t.Helper()
	ctx := context.Background()
	other, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "other", PID: 1, Group: "default", Expiry: time.Hour})
	require.NoError(t, err)
	_, err = store.DB().ExecContext(ctx, fmt.Sprintf(`INSERT INTO workflows (type, definition_version, status, state, executor_group, executor_id, input, variables, created, modified, started, step_deadline, version)
			SELECT 'demo.order', 1, 'EXECUTING', 'ship', 'default', %d, '{}', '{}', now(), now(), now(), now() + interval '1 hour', 3 FROM generate_series(1, %d)`, other.ID, held))
	require.NoError(t, err)
}

// TestHotStatementsKeepTheirPlans runs a workload through a node on a PostgreSQL database that
// already holds many ended workflows with their history and many workflows claimed by another
// node, then EXPLAINs every statement the workload sent, with the statistics of a quiet moment and
// again after ANALYZE: none may scan stored or claimed rows, so the cost of a step stays the same
// however much is stored or claimed, whatever the planner knows.
func TestHotStatementsKeepTheirPlans(t *testing.T) {
	t.Parallel()
	t.Run("history", func(t *testing.T) {
		t.Parallel()
		checkHotPlans(t, "the statistics of a quiet moment", true, func(store *persistence.Store) { preloadHistory(t, store, 30000, 3000) })
	})
	// The statistics of a table that VACUUM saw (nearly) empty say it holds no rows, whatever its
	// size: a plan that trusts them and loops over the rows it finds costs claimed × batch. A
	// sequential scan is priced by the table's size on disk, which the planner reads afresh: with
	// these statistics it is chosen only while the table is small, so only loops are faults here.
	// Partitioned history: the statements that read history by ID or by workflow find their rows
	// through each partition's indexes.
	t.Run("partitioned", func(t *testing.T) {
		t.Parallel()
		checkHotPlans(t, "the statistics of a quiet moment, on partitioned history", true, func(store *persistence.Store) {
			preloadHistory(t, store, 30000, 0)
			_, err := store.PartitionHistory(context.Background(), persistence.PartitionHistoryParams{Width: persistence.PartitionDay,
				Ahead: 1, Now: persistence.Now()})
			require.NoError(t, err)
			_, err = store.DB().ExecContext(context.Background(), "ANALYZE")
			require.NoError(t, err)
			holdWorkflows(t, store, 3000)
		})
	})
	t.Run("emptied", func(t *testing.T) {
		t.Parallel()
		checkHotPlans(t, "the statistics of an emptied table", false, func(store *persistence.Store) { preloadEmptied(t, store, 30000, 3000) })
	})
}

// preloadEmptied leaves a PostgreSQL schema as a node sees it after a purge emptied its tables
// while it was quiet and VACUUM ANALYZE ran (as autovacuum does then): the tables keep their pages,
// the statistics say they hold one row. Then workflows that another node holds fill them again.
func preloadEmptied(t *testing.T, store *persistence.Store, ended, held int) {
	t.Helper()
	ctx := context.Background()
	preloadHistory(t, store, ended, 0)
	// The last workflow and its history stay, so VACUUM cannot give the tables' pages back.
	var last int64
	require.NoError(t, store.DB().QueryRowContext(ctx, "SELECT max(id) FROM workflows").Scan(&last))
	for table := range storedTables {
		column := "workflow_id"
		if table == "workflows" {
			column = "id"
		}
		if table == "idempotency_keys" || table == "form_submissions" {
			_, err := store.DB().ExecContext(ctx, "DELETE FROM "+table)
			require.NoError(t, err)
			continue
		}
		_, err := store.DB().ExecContext(ctx, fmt.Sprintf("DELETE FROM %s WHERE %s <> %d", table, column, last))
		require.NoError(t, err, table)
	}
	for table := range storedTables {
		_, err := store.DB().ExecContext(ctx, "VACUUM ANALYZE "+table)
		require.NoError(t, err, table)
	}
	holdWorkflows(t, store, held)
}

// checkHotPlans runs a workload through a node on a PostgreSQL schema that prepare filled, and
// EXPLAINs every statement it sent, with the statistics prepare left and again after ANALYZE.
func checkHotPlans(t *testing.T, stats string, seqScans bool, prepare func(store *persistence.Store)) {
	log := &statementLog{stmts: map[string][][]any{}, local: map[*pgx.Conn]string{}, settings: map[string]string{}}
	url := dbtest.URL(t, persistence.KindPostgres)
	ctx := context.Background()
	store, err := persistence.Open(ctx, url, persistence.OpenOptions{MaxConns: 10, QueryTracer: log})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	_, err = store.Migrate(ctx)
	require.NoError(t, err)
	prepare(store)

	b := setup(t, store)
	log.setOn(true)
	// A node that dies holding workflows: the live node recovers them.
	dead, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "dead", PID: 2, Group: "default", Expiry: 300 * time.Millisecond})
	require.NoError(t, err)
	for range 20 {
		b.start(t, "demo.order", `{}`)
	}
	_, err = store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: dead.ID, Group: "default", Limit: 20,
		Now: persistence.Now(), StepDeadline: persistence.Now().Add(time.Minute), Types: []string{"demo.order"}})
	require.NoError(t, err)
	b.startWorker(t, fastOptions())

	var ids []int64
	for i := range 200 {
		ids = append(ids, b.start(t, "demo.order", fmt.Sprintf(`{"failFirstCharge": %v}`, i%4 == 0)).ID)
	}
	for range 20 {
		w := b.start(t, "demo.approval", `{}`)
		_, err := b.engine.Signal(ctx, workflow.SignalParams{ID: w.ID, Name: "approve"})
		require.NoError(t, err)
		ids = append(ids, w.ID)
	}
	for range 3 {
		ids = append(ids, b.start(t, "demo.fanout", `{"children": 3}`).ID)
	}
	slow := b.start(t, "demo.order", `{"shipDelayMs": 60000}`)
	b.waitFor(t, slow.ID, "shipping", func(w *persistence.Workflow) bool {
		return w.State == "ship" && w.Status == persistence.StatusExecuting
	})
	_, err = b.engine.Cancel(ctx, workflow.ChangeParams{ID: slow.ID})
	require.NoError(t, err)
	for _, id := range ids {
		b.waitStatus(t, id, persistence.StatusFinished)
	}
	// Then a burst that a second node claims and completes up to 2000 at a time, as under load.
	opts := fastOptions()
	opts.Concurrency, opts.ClaimBatch, opts.CompleteBatch = 2000, 2000, 2000
	b.startWorker(t, opts)
	burst := make([]workflow.StartParams, 2000)
	for i := range burst {
		burst[i] = workflow.StartParams{Type: "bench.noop"}
	}
	started, err := b.engine.StartMany(ctx, burst)
	require.NoError(t, err)
	for _, r := range started {
		b.waitStatus(t, r.Workflow.ID, persistence.StatusFinished)
	}
	log.setOn(false)

	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	log.mu.Lock()
	defer log.mu.Unlock()
	require.NotEmpty(t, log.order)
	explained := 0
	explainAll := func(stats string, seqScans, generic bool) {
		for _, sql := range log.order {
			head := strings.ToUpper(strings.TrimSpace(sql))
			if !strings.HasPrefix(head, "SELECT") && !strings.HasPrefix(head, "UPDATE") && !strings.HasPrefix(head, "INSERT") &&
				!strings.HasPrefix(head, "DELETE") && !strings.HasPrefix(head, "WITH") {
				continue // BEGIN, SET, LISTEN, ...
			}
			for _, args := range log.stmts[sql] {
				var raw []byte
				tx, err := conn.Begin(ctx)
				require.NoError(t, err)
				if set := log.settings[sql]; set != "" {
					_, err := tx.Exec(ctx, set)
					require.NoError(t, err, set)
				}
				if generic {
					if raw = explainGeneric(ctx, t, tx, sql, args); raw == nil {
						require.NoError(t, tx.Rollback(ctx))
						continue // no parameters: planned at every run, explained above
					}
				} else {
					require.NoError(t, tx.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+sql, args...).Scan(&raw), sql)
				}
				require.NoError(t, tx.Rollback(ctx))
				var plan any
				require.NoError(t, json.Unmarshal(raw, &plan))
				explained++
				if faults := planFaults(sql, plan, seqScans); len(faults) > 0 {
					t.Errorf("with %s: %s\n%s\nplan: %s", stats, strings.Join(faults, "; "), sql, raw)
				}
			}
		}
	}
	explainAll(stats, seqScans, false)
	explainAll(stats+" (generic plans)", seqScans, true)
	_, err = conn.Exec(ctx, "ANALYZE")
	require.NoError(t, err)
	explainAll("fresh statistics", true, false)
	explainAll("fresh statistics (generic plans)", true, true)
	t.Logf("explained %d runs of %d statements", explained, len(log.order))
}

// explainGeneric is the plan a prepared statement with parameters gets once PostgreSQL plans it
// for any values (after five runs, as pgx's cached statements run): the statement is prepared,
// planned with plan_cache_mode = force_generic_plan and explained for args.
func explainGeneric(ctx context.Context, t *testing.T, tx pgx.Tx, sql string, args []any) []byte {
	t.Helper()
	var values []any // the statement's values, without pgx's options among them
	for _, a := range args {
		switch a.(type) {
		case pgx.QueryExecMode, pgx.QueryResultFormats, pgx.QueryResultFormatsByOID:
		default:
			values = append(values, a)
		}
	}
	if len(values) == 0 {
		return nil
	}
	args = values
	_, err := tx.Exec(ctx, "PREPARE hot AS "+sql)
	require.NoError(t, err, sql)
	_, err = tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan")
	require.NoError(t, err)
	var types []string
	require.NoError(t, tx.QueryRow(ctx, "SELECT parameter_types::text[] FROM pg_prepared_statements WHERE name = 'hot'").Scan(&types))
	require.Len(t, types, len(args), sql)
	params := make([]string, len(types))
	for i, typ := range types {
		params[i] = fmt.Sprintf("$%d::%s", i+1, typ)
	}
	var raw []byte
	// EXECUTE takes no parameters of its own: pgx writes the values into its text.
	require.NoError(t, tx.QueryRow(ctx, "EXPLAIN (FORMAT JSON) EXECUTE hot("+strings.Join(params, ", ")+")",
		append([]any{pgx.QueryExecModeSimpleProtocol}, args...)...).Scan(&raw), sql)
	_, err = tx.Exec(ctx, "DEALLOCATE hot")
	require.NoError(t, err)
	return raw
}
