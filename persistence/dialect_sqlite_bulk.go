package persistence

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// The hot writes on SQLite pass their rows as one JSON array of arrays that the statement reads
// with json_each, so a statement's text is the same for one row or thousands. SQLite parses every
// statement it runs, and Bun writes each value into the text: a batch of 1,000 completions or
// starts spent more of its time in SQLite's parser than in the writes themselves.

// sqliteRows encodes rows for json_each. Each value is nil, a string, an int64, an int, a bool (1
// or 0, as SQLite stores it), a time (as Bun writes it) or a pointer to one of those.
func sqliteRows(n int, row func(i int) []any) (string, error) {
	out := make([][]any, n)
	for i := range out {
		vals := row(i)
		for k, v := range vals {
			var err error
			if vals[k], err = sqliteValue(v); err != nil {
				return "", err
			}
		}
		out[i] = vals
	}
	b, err := json.Marshal(out)
	return string(b), err
}

func sqliteValue(v any) (any, error) {
	switch v := v.(type) {
	case *string:
		if v == nil {
			return nil, nil
		}
		return sqliteValue(*v)
	case string:
		if strings.IndexByte(v, 0) >= 0 {
			return nil, errStringNul
		}
		return v, nil
	case *int64:
		if v == nil {
			return nil, nil
		}
		return *v, nil
	case bool:
		if v {
			return 1, nil
		}
		return 0, nil
	case *time.Time:
		if v == nil {
			return nil, nil
		}
		return sqliteValue(*v)
	case time.Time:
		return sqliteTimeText(v)
	case int64, int, nil:
		return v, nil
	}
	return nil, fmt.Errorf("cairn: no SQLite form for a %T", v)
}

// errStringNul refuses a string that SQLite would cut at its NUL byte, as Bun does.
var errStringNul = fmt.Errorf("cairn: a string contains a NUL byte (0x00)")

// sqliteTimeText writes a time as Bun's SQLite dialect does (sqliteTimeGuard), refusing the same
// years.
func sqliteTimeText(t time.Time) (string, error) {
	t = t.UTC()
	if y := t.Year(); y < 1 || y > 9999 {
		return "", errTimeOutOfRange
	}
	return t.Format("2006-01-02 15:04:05.999999-07:00"), nil
}

// sqliteColumns reads the columns of a json_each row: "j.value ->> 0 AS a, j.value ->> 1 AS b".
func sqliteColumns(names ...string) string {
	cols := make([]string, len(names))
	for i, name := range names {
		cols[i] = fmt.Sprintf("j.value ->> %d AS %s", i, name)
	}
	return strings.Join(cols, ", ")
}

// sqliteInsert inserts the JSON rows into table's columns, in order, and returns their IDs in input
// order. It reads them from the statement's last rowid rather than a RETURNING clause and an
// ORDER BY: SQLite builds both as temporary tables (a sorter and an ephemeral B-tree a statement,
// each with pages of its own), which cost the drain's inserts about a tenth of their time.
// The IDs follow from the insert alone: jsonb_each reads the array in order and the INSERT takes
// its rows as read; the tables' INTEGER PRIMARY KEY AUTOINCREMENT hands each row one above the
// largest rowid so far; and the transaction holds SQLite's only write lock, so no other row lands
// between them. TestBatchInsertIDsFollowInputOrder checks it.
func sqliteInsert(ctx context.Context, s *Store, table string, columns []string, n int, row func(i int) []any) ([]int64, error) {
	rows, err := sqliteRows(n, row)
	if err != nil {
		return nil, err
	}
	q := `INSERT INTO ` + table + ` (` + strings.Join(columns, ", ") + `) SELECT ` + sqliteColumns(columns...) + ` FROM jsonb_each(?) AS j`
	res, err := rawSQL(s).ExecContext(ctx, q, rows)
	if err != nil {
		return nil, err
	}
	last, err := res.LastInsertId()
	if err != nil {
		return nil, err
	}
	got, err := res.RowsAffected()
	if err != nil {
		return nil, err
	}
	if got != int64(n) {
		return nil, fmt.Errorf("inserted %d rows into %s, expected %d", got, table, n)
	}
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = last - int64(n-1-i)
	}
	return ids, nil
}

func (sqliteDialect) insertWorkflows(ctx context.Context, s *Store, wfs []*Workflow) error {
	ids, err := sqliteInsert(ctx, s, "workflows", []string{"type", "definition_version", "external_id", "business_key", "launch_token",
		"status", "state", "state_text", "next_activation", "retries", "priority", "executor_group", "executor_id", "parent_id", "root_id",
		"parent_action_id", "input", "variables", "wait_signal", "last_error", "step_deadline", "created", "modified", "started", "finished",
		"version", "concurrency_key", "debounce_key", "steps"}, len(wfs), func(i int) []any {
		w := wfs[i]
		return []any{w.Type, int64(w.DefinitionVersion), w.ExternalID, w.BusinessKey, w.LaunchToken, string(w.Status), w.State, w.StateText,
			w.NextActivation, int64(w.Retries), int64(w.Priority), w.ExecutorGroup, w.ExecutorID, w.ParentID, w.RootID, w.ParentActionID,
			string(w.Input), string(w.Variables), w.WaitSignal, w.LastError, w.StepDeadline, w.Created, w.Modified, w.Started, w.Finished,
			int64(w.Version), w.ConcurrencyKey, w.DebounceKey, int64(w.Steps)}
	})
	if err != nil {
		return err
	}
	for i, id := range ids {
		wfs[i].ID = id
	}
	return nil
}

func (sqliteDialect) insertActions(ctx context.Context, s *Store, actions []*Action) error {
	ids, err := sqliteInsert(ctx, s, "actions", []string{"workflow_id", "type", "from_state", "state", "state_text", "retry_no",
		"executor_id", "actor", "task_instance_id", "at"}, len(actions), func(i int) []any {
		a := actions[i]
		return []any{a.WorkflowID, string(a.Type), a.FromState, a.State, a.StateText, int64(a.RetryNo), a.ExecutorID, a.Actor, a.TaskInstanceID, a.At}
	})
	if err != nil {
		return err
	}
	for i, id := range ids {
		actions[i].ID = id
	}
	return nil
}

func (sqliteDialect) insertTaskInstances(ctx context.Context, s *Store, tis []*TaskInstance) error {
	ids, err := sqliteInsert(ctx, s, "task_instances", []string{"workflow_id", "state", "task_type", "attempt", "status", "executor_id",
		"host", "started", "finished", "output", "error"}, len(tis), func(i int) []any {
		t := tis[i]
		return []any{t.WorkflowID, t.State, t.TaskType, int64(t.Attempt), string(t.Status), t.ExecutorID, t.Host, t.Started, t.Finished,
			jsonText(t.Output), t.Error}
	})
	if err != nil {
		return err
	}
	for i, id := range ids {
		tis[i].ID = id
	}
	return nil
}

func (sqliteDialect) insertChangeEvents(ctx context.Context, s *Store, events []*ChangeEvent) error {
	ids, err := sqliteInsert(ctx, s, "change_events", []string{"workflow_id", "type", "action_id", "status", "state", "at"}, len(events),
		func(i int) []any {
			e := events[i]
			return []any{e.WorkflowID, e.Type, e.ActionID, string(e.Status), e.State, e.At}
		})
	if err != nil {
		return err
	}
	for i, id := range ids {
		events[i].ID = id
	}
	return nil
}

// complete joins the workflows to the completions read from JSON in one UPDATE ... FROM.
func (sqliteDialect) complete(ctx context.Context, s *Store, cs []WorkflowCompletion, now time.Time) ([]int64, error) {
	rows, err := sqliteRows(len(cs), func(i int) []any {
		c := cs[i]
		return []any{c.ID, c.ExecutorID, int64(c.ClaimedVersion), string(c.Status), c.State, c.StateText, c.NextActivation, int64(c.Retries),
			string(c.Variables), c.WaitSignal, c.LastError, c.Finished, c.KeepClaim, c.StepDeadline, int64(c.Steps)}
	})
	if err != nil {
		return nil, err
	}
	modified, err := sqliteTimeText(now)
	if err != nil {
		return nil, err
	}
	q := `UPDATE workflows AS w SET status = v.status, state = v.state, state_text = v.state_text,
			next_activation = v.next_activation, retries = v.retries, executor_id = CASE WHEN v.keep THEN v.executor_id ELSE NULL END,
			variables = v.variables, wait_signal = v.wait_signal, last_error = v.last_error, step_deadline = v.step_deadline,
			finished = v.finished, modified = ?, version = w.version + 1, steps = v.steps
		FROM (SELECT ` + sqliteColumns("id", "executor_id", "claimed_version", "status", "state", "state_text", "next_activation", "retries",
		"variables", "wait_signal", "last_error", "finished", "keep", "step_deadline", "steps") + ` FROM jsonb_each(?) AS j) AS v
		WHERE w.id = v.id AND w.executor_id = v.executor_id AND w.version = v.claimed_version AND w.status = 'EXECUTING'
		RETURNING id` // SQLite's RETURNING sees only the target table, unaliased
	return returnedIDs(ctx, s, q, len(cs), modified, rows)
}
