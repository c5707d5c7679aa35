package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
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
}

func (l *statementLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.on {
		return ctx
	}
	if _, seen := l.stmts[data.SQL]; !seen {
		l.order = append(l.order, data.SQL)
	}
	if len(l.stmts[data.SQL]) < 3 {
		l.stmts[data.SQL] = append(l.stmts[data.SQL], data.Args)
	}
	return ctx
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

// planFaults returns what in an EXPLAIN (FORMAT JSON) plan makes a statement's cost grow with the
// rows stored or claimed: a sequential scan of a stored table, a join whose condition is checked
// only after the rows are fetched, and a batch (unnest) joined to workflows through anything but
// their primary key.
func planFaults(sql string, plan any) []string {
	var faults []string
	batch := strings.Contains(sql, "unnest(")
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		rel, _ := n["Relation Name"].(string)
		typ, _ := n["Node Type"].(string)
		index, _ := n["Index Name"].(string)
		switch {
		case typ == "Seq Scan" && storedTables[rel]:
			faults = append(faults, "sequential scan of "+rel)
		case n["Join Filter"] != nil:
			faults = append(faults, fmt.Sprintf("join filter %v", n["Join Filter"]))
		case batch && rel == "workflows" && strings.Contains(typ, "Index") && index != "workflows_pkey" && !strings.HasPrefix(sql, "INSERT"):
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
	other, err := store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: "other", PID: 1, Group: "default", Expiry: time.Hour})
	require.NoError(t, err)
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
		fmt.Sprintf(`INSERT INTO workflows (type, definition_version, status, state, executor_group, executor_id, input, variables, created, modified, started, step_deadline, version)
			SELECT 'demo.order', 1, 'EXECUTING', 'ship', 'default', %d, '{}', '{}', now(), now(), now(), now() + interval '1 hour', 3 FROM generate_series(1, %d)`, other.ID, held),
	) {
		_, err := store.DB().ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
}

// TestHotStatementsKeepTheirPlans runs a workload through a node on a PostgreSQL database that
// already holds many ended workflows with their history and many workflows claimed by another
// node, then EXPLAINs every statement the workload sent, with the statistics of a quiet moment and
// again after ANALYZE: none may scan stored or claimed rows, so the cost of a step stays the same
// however much is stored or claimed, whatever the planner knows.
func TestHotStatementsKeepTheirPlans(t *testing.T) {
	t.Parallel()
	log := &statementLog{stmts: map[string][][]any{}}
	url := dbtest.URL(t, persistence.KindPostgres)
	ctx := context.Background()
	store, err := persistence.Open(ctx, url, persistence.OpenOptions{MaxConns: 10, QueryTracer: log})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	_, err = store.Migrate(ctx)
	require.NoError(t, err)
	preloadHistory(t, store, 30000, 3000)

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
	log.setOn(false)

	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	log.mu.Lock()
	defer log.mu.Unlock()
	require.NotEmpty(t, log.order)
	explained := 0
	explainAll := func(stats string) {
		for _, sql := range log.order {
			head := strings.ToUpper(strings.TrimSpace(sql))
			if !strings.HasPrefix(head, "SELECT") && !strings.HasPrefix(head, "UPDATE") && !strings.HasPrefix(head, "INSERT") &&
				!strings.HasPrefix(head, "DELETE") && !strings.HasPrefix(head, "WITH") {
				continue // BEGIN, SET, LISTEN, ...
			}
			for _, args := range log.stmts[sql] {
				var raw []byte
				require.NoError(t, conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+sql, args...).Scan(&raw), sql)
				var plan any
				require.NoError(t, json.Unmarshal(raw, &plan))
				explained++
				if faults := planFaults(sql, plan); len(faults) > 0 {
					t.Errorf("with %s: %s\n%s\nplan: %s", stats, strings.Join(faults, "; "), sql, raw)
				}
			}
		}
	}
	explainAll("the statistics of a quiet moment")
	_, err = conn.Exec(ctx, "ANALYZE")
	require.NoError(t, err)
	explainAll("fresh statistics")
	t.Logf("explained %d runs of %d statements", explained, len(log.order))
}
