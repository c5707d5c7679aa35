package persistence

import (
	"context"
	"time"
)

// The PostgreSQL dialect's fast paths for the hot bulk statements. Bun writes every value into the SQL text,
// which PostgreSQL must parse; a batch of 500 rows is a long statement. Here each column travels
// as one array bind parameter in pgx's binary format and `unnest` turns the arrays back into rows.

func jsonText(b []byte) *string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	return &s
}

func (postgresDialect) insertTaskInstances(ctx context.Context, s *Store, tis []*TaskInstance) error {
	n := len(tis)
	wf, att := make([]int64, n), make([]int32, n)
	state, typ, status, host := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	exec := make([]*int64, n)
	started := make([]time.Time, n)
	finished := make([]*time.Time, n)
	output, errText := make([]*string, n), make([]*string, n)
	for i, t := range tis {
		wf[i], att[i], state[i], typ[i], status[i], host[i] = t.WorkflowID, int32(t.Attempt), t.State, t.TaskType, string(t.Status), t.Host
		exec[i], started[i], finished[i], output[i], errText[i] = t.ExecutorID, UTC(t.Started), UTCPtr(t.Finished), jsonText(t.Output), t.Error
	}
	ids, err := insertedIDs(ctx, s, `INSERT INTO task_instances (workflow_id, state, task_type, attempt, status, executor_id, host, started, finished, output, error)
		SELECT u.wf, u.state, u.typ, u.att, u.status, u.exec, u.host, u.started, u.finished, u.output::jsonb, u.err
		FROM unnest($1::bigint[], $2::text[], $3::text[], $4::int[], $5::text[], $6::bigint[], $7::text[], $8::timestamptz[], $9::timestamptz[], $10::text[], $11::text[])
			WITH ORDINALITY AS u(wf, state, typ, att, status, exec, host, started, finished, output, err, ord)
		ORDER BY u.ord RETURNING id`, n, wf, state, typ, att, status, exec, host, started, finished, output, errText)
	if err != nil {
		return err
	}
	for i, t := range tis {
		t.ID = ids[i]
	}
	return nil
}

func (postgresDialect) insertActions(ctx context.Context, s *Store, actions []*Action) error {
	n := len(actions)
	wf, retry := make([]int64, n), make([]int32, n)
	typ, state := make([]string, n), make([]string, n)
	from, text, actor := make([]*string, n), make([]*string, n), make([]*string, n)
	exec, task := make([]*int64, n), make([]*int64, n)
	at := make([]time.Time, n)
	for i, a := range actions {
		wf[i], retry[i], typ[i], state[i] = a.WorkflowID, int32(a.RetryNo), string(a.Type), a.State
		from[i], text[i], actor[i], exec[i], task[i], at[i] = a.FromState, a.StateText, a.Actor, a.ExecutorID, a.TaskInstanceID, UTC(a.At)
	}
	ids, err := insertedIDs(ctx, s, `INSERT INTO actions (workflow_id, type, from_state, state, state_text, retry_no, executor_id, actor, task_instance_id, at)
		SELECT u.wf, u.typ, u.from_state, u.state, u.text, u.retry, u.exec, u.actor, u.task, u.at
		FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::bigint[], $8::text[], $9::bigint[], $10::timestamptz[])
			WITH ORDINALITY AS u(wf, typ, from_state, state, text, retry, exec, actor, task, at, ord)
		ORDER BY u.ord RETURNING id`, n, wf, typ, from, state, text, retry, exec, actor, task, at)
	if err != nil {
		return err
	}
	for i, a := range actions {
		a.ID = ids[i]
	}
	return nil
}

func (postgresDialect) insertChangeEvents(ctx context.Context, s *Store, events []*ChangeEvent) error {
	n := len(events)
	wf := make([]int64, n)
	typ, status, state := make([]string, n), make([]string, n), make([]string, n)
	action := make([]*int64, n)
	at := make([]time.Time, n)
	for i, e := range events {
		wf[i], typ[i], status[i], state[i], action[i], at[i] = e.WorkflowID, e.Type, string(e.Status), e.State, e.ActionID, UTC(e.At)
	}
	ids, err := insertedIDs(ctx, s, `INSERT INTO change_events (workflow_id, type, action_id, status, state, at)
		SELECT u.wf, u.typ, u.action, u.status, u.state, u.at
		FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::timestamptz[])
			WITH ORDINALITY AS u(wf, typ, action, status, state, at, ord)
		ORDER BY u.ord RETURNING id`, n, wf, typ, action, status, state, at)
	if err != nil {
		return err
	}
	for i, e := range events {
		e.ID = ids[i]
	}
	return nil
}

func (postgresDialect) insertWorkflows(ctx context.Context, s *Store, wfs []*Workflow) error {
	n := len(wfs)
	typ, status, state, group := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	defVersion, retries, priority, version := make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
	ext, bk, lt, text, wait, lastErr := make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
	next, deadline, started, finished := make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n)
	exec, parent, root, parentAction := make([]*int64, n), make([]*int64, n), make([]*int64, n), make([]*int64, n)
	input, vars := make([]string, n), make([]string, n)
	created, modified := make([]time.Time, n), make([]time.Time, n)
	ckey, dkey := make([]*string, n), make([]*string, n)
	for i, w := range wfs {
		ckey[i], dkey[i] = w.ConcurrencyKey, w.DebounceKey
		typ[i], status[i], state[i], group[i] = w.Type, string(w.Status), w.State, w.ExecutorGroup
		defVersion[i], retries[i], priority[i], version[i] = int32(w.DefinitionVersion), int32(w.Retries), int32(w.Priority), int32(w.Version)
		ext[i], bk[i], lt[i], text[i], wait[i], lastErr[i] = w.ExternalID, w.BusinessKey, w.LaunchToken, w.StateText, w.WaitSignal, w.LastError
		next[i], deadline[i], started[i], finished[i] = UTCPtr(w.NextActivation), UTCPtr(w.StepDeadline), UTCPtr(w.Started), UTCPtr(w.Finished)
		exec[i], parent[i], root[i], parentAction[i] = w.ExecutorID, w.ParentID, w.RootID, w.ParentActionID
		input[i], vars[i] = string(w.Input), string(w.Variables)
		created[i], modified[i] = UTC(w.Created), UTC(w.Modified)
	}
	ids, err := insertedIDs(ctx, s, `INSERT INTO workflows (type, definition_version, external_id, business_key, launch_token, status, state,
			state_text, next_activation, retries, priority, executor_group, executor_id, parent_id, root_id, parent_action_id, input, variables,
			wait_signal, last_error, step_deadline, created, modified, started, finished, version, concurrency_key, debounce_key)
		SELECT u.typ, u.dv, u.ext, u.bk, u.lt, u.status, u.state, u.text, u.next, u.retries, u.priority, u.grp, u.exec, u.parent, u.root,
			u.pa, u.input::jsonb, u.vars::jsonb, u.wait, u.lerr, u.deadline, u.created, u.modified, u.started, u.finished, u.version, u.ckey, u.dkey
		FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::timestamptz[],
			$10::int[], $11::int[], $12::text[], $13::bigint[], $14::bigint[], $15::bigint[], $16::bigint[], $17::text[], $18::text[],
			$19::text[], $20::text[], $21::timestamptz[], $22::timestamptz[], $23::timestamptz[], $24::timestamptz[], $25::timestamptz[], $26::int[],
			$27::text[], $28::text[])
			WITH ORDINALITY AS u(typ, dv, ext, bk, lt, status, state, text, next, retries, priority, grp, exec, parent, root, pa, input, vars,
				wait, lerr, deadline, created, modified, started, finished, version, ckey, dkey, ord)
		ORDER BY u.ord RETURNING id`, n, typ, defVersion, ext, bk, lt, status, state, text, next, retries, priority, group, exec, parent, root,
		parentAction, input, vars, wait, lastErr, deadline, created, modified, started, finished, version, ckey, dkey)
	if err != nil {
		return err
	}
	for i, w := range wfs {
		w.ID = ids[i]
	}
	return nil
}

func (postgresDialect) complete(ctx context.Context, s *Store, cs []WorkflowCompletion, now time.Time) (_ []int64, err error) {
	n := len(cs)
	id, exec := make([]int64, n), make([]int64, n)
	ver, retries := make([]int32, n), make([]int32, n)
	status, state, vars := make([]string, n), make([]string, n), make([]string, n)
	text, wait, lastErr := make([]*string, n), make([]*string, n), make([]*string, n)
	next, finished, deadline := make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n)
	keep, steps := make([]bool, n), make([]int32, n)
	for i, c := range cs {
		steps[i] = int32(c.Steps)
		id[i], exec[i], ver[i], retries[i] = c.ID, c.ExecutorID, int32(c.ClaimedVersion), int32(c.Retries)
		status[i], state[i], vars[i] = string(c.Status), c.State, string(c.Variables)
		text[i], wait[i], lastErr[i], next[i], finished[i] = c.StateText, c.WaitSignal, c.LastError, UTCPtr(c.NextActivation), UTCPtr(c.Finished)
		keep[i], deadline[i] = c.KeepClaim, UTCPtr(c.StepDeadline)
	}
	// The batch finds its rows by primary key only (w.id = ANY($1)). The fence on executor_id is
	// written so that no index can serve it (v.exec is never null): with the statistics of a quiet
	// moment the planner would otherwise walk workflows_executor_idx, every workflow the executors
	// hold, per batch. And the statement must not trust the row count the statistics give: after a
	// purge emptied the table they say it holds one row, and the planner then loops over the rows
	// it finds and, for each, over the whole batch (claimed × batch comparisons: seconds for a batch
	// of 2000), or scans the table. So within the completion's transaction, for this statement only,
	// neither a nested loop nor a sequential scan is on offer: the batch is hashed (or both sides
	// are merged by ID) against its rows fetched by primary key, whatever the statistics.
	restore, err := plannerWithout(ctx, s, "nestloop", "seqscan")
	if err != nil {
		return nil, err
	}
	defer func() {
		if rerr := restore(); rerr != nil && err == nil {
			err = rerr
		}
	}()
	return returnedIDs(ctx, s, `UPDATE workflows AS w SET status = v.status, state = v.state, state_text = v.text,
			next_activation = v.next, retries = v.retries, executor_id = CASE WHEN v.keep THEN v.exec ELSE NULL END,
			variables = v.vars::jsonb, wait_signal = v.wait, last_error = v.lerr, step_deadline = v.deadline, finished = v.finished,
			modified = $13, version = w.version + 1, steps = v.steps
		FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::text[], $5::text[], $6::text[], $7::timestamptz[], $8::int[], $9::text[],
			$10::text[], $11::text[], $12::timestamptz[], $14::boolean[], $15::timestamptz[], $16::int[])
			AS v(id, exec, ver, status, state, text, next, retries, vars, wait, lerr, finished, keep, deadline, steps)
		WHERE w.id = ANY($1::bigint[]) AND w.id = v.id AND w.executor_id IS NOT DISTINCT FROM v.exec AND w.version = v.ver
			AND w.status = 'EXECUTING'
		RETURNING w.id`, n, id, exec, ver, status, state, text, next, retries, vars, wait, lastErr, finished, UTC(now), keep, deadline, steps)
}

func (postgresDialect) insertActionVariables(ctx context.Context, s *Store, vars []*ActionVariable) error {
	n := len(vars)
	wf, action := make([]int64, n), make([]int64, n)
	key, value := make([]string, n), make([]*string, n)
	for i, v := range vars {
		wf[i], action[i], key[i], value[i] = v.WorkflowID, v.ActionID, v.Key, jsonText(v.Value)
	}
	_, err := rawSQL(s).ExecContext(ctx, `INSERT INTO action_variables (workflow_id, action_id, key, value)
		SELECT u.wf, u.action, u.key, u.value::jsonb FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[]) AS u(wf, action, key, value)`,
		wf, action, key, value)
	return err
}

func (postgresDialect) insertActivityLogs(ctx context.Context, s *Store, logs []*ActivityLog) error {
	n := len(logs)
	wf := make([]int64, n)
	task := make([]*int64, n)
	name, value := make([]string, n), make([]string, n)
	at := make([]time.Time, n)
	for i, l := range logs {
		wf[i], task[i], name[i], value[i], at[i] = l.WorkflowID, l.TaskInstanceID, l.Name, l.Value, UTC(l.At)
	}
	ids, err := insertedIDs(ctx, s, `INSERT INTO activity_logs (workflow_id, task_instance_id, name, value, at)
		SELECT u.wf, u.task, u.name, u.value, u.at
		FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::timestamptz[]) WITH ORDINALITY AS u(wf, task, name, value, at, ord)
		ORDER BY u.ord RETURNING id`, n, wf, task, name, value, at)
	if err != nil {
		return err
	}
	for i, l := range logs {
		l.ID = ids[i]
	}
	return nil
}
