// Handing slots on: when a completion ends workflows that held slots of their keys, the same
// transaction claims each key's next due workflow for the same executor, so that a key's queue
// moves at the pace of its steps instead of waiting for the next claim.

package persistence

import (
	"context"
	"slices"

	"github.com/uptrace/bun/dialect/pgdialect"
)

// WorkflowFlowHandoff claims, inside the transaction that ended some of a type's holders, for
// each key in freed (the holders of that key the transaction ended) at most that many of the
// key's oldest due workflows, and no more than its free slots: a slot passes from the workflow
// that let it go to the next, so a limit is never exceeded whatever other nodes claim meanwhile
// (a claim that counted the ended holders counted their slots as taken). Workflows locked by
// another claim are skipped. For WORKFLOW scope, strategy QUEUE and no rate limit only: the
// caller checks.
func (s *Store) WorkflowFlowHandoff(ctx context.Context, p WorkflowClaimParams, f FlowSpec, freed map[string]int) ([]*Workflow, error) {
	if f.Concurrency == 0 || len(freed) == 0 {
		return nil, nil
	}
	keys := make([]string, 0, len(freed))
	for k := range freed {
		keys = append(keys, k)
	}
	if s.Kind() == KindPostgres && !slices.Contains(keys, "") {
		return s.flowHandoffPostgres(ctx, p, f, keys, freed)
	}
	holders, err := s.flowHolders(ctx, f, keys)
	if err != nil {
		return nil, err
	}
	var heads []keyHead
	for _, k := range keys {
		if n := min(freed[k], f.Concurrency-holders[k]); n > 0 {
			heads = append(heads, keyHead{key: k, n: n})
		}
	}
	if len(heads) == 0 {
		return nil, nil
	}
	now := UTC(p.Now)
	cands, err := s.flowHeads(ctx, p, f, heads, now)
	if err != nil || len(cands) == 0 {
		return nil, err
	}
	ids := make([]int64, 0, len(cands))
	for _, c := range cands {
		if c.Status == StatusCreated { // a due holder runs on by its own claim
			ids = append(ids, c.ID)
		}
	}
	return s.claimIDs(ctx, p, ids)
}

// claimIDs claims the workflows of ids that are still unclaimed (skipping those another
// transaction has locked), as a claim of p.
func (s *Store) claimIDs(ctx context.Context, p WorkflowClaimParams, ids []int64) ([]*Workflow, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	c := s.newClaimStatement(p)
	c.Types = nil // the IDs say which
	c.Due, c.DueArgs = "id IN (?) AND executor_id IS NULL", []any{bunIn(ids)}
	if s.Kind() == KindPostgres {
		c.Due, c.DueArgs = "id = ANY(?::bigint[]) AND executor_id IS NULL", []any{ids} // bound as one array: one text for any number
	}
	c.Order, c.Limit = "priority DESC, next_activation, id", len(ids)
	return s.dialect.claim(ctx, s, c)
}

// flowHandoffPostgres is WorkflowFlowHandoff in one statement: each key's free slots counted from
// workflows_flow_holders_idx, its oldest due workflows found by a lateral probe of
// workflows_flow_due_idx, locked with SKIP LOCKED and claimed by the same UPDATE. The group is
// checked outside the probe (a type's workflows share its group): named inside, it would let a
// planner with the statistics of a young table walk the due index for each key.
func (s *Store) flowHandoffPostgres(ctx context.Context, p WorkflowClaimParams, f FlowSpec, keys []string, freed map[string]int) ([]*Workflow, error) {
	query, args := s.flowHandoffQuery(p, f, keys, freed)
	var out []*Workflow
	err := s.idb.NewRaw(query, args...).Scan(ctx, &out)
	return out, err
}

// flowHandoffQuery is flowHandoffPostgres's statement and its arguments.
func (s *Store) flowHandoffQuery(p WorkflowClaimParams, f FlowSpec, keys []string, freed map[string]int) (string, []any) {
	ns := make([]int, len(keys))
	for i, k := range keys {
		ns[i] = freed[k]
	}
	c := s.newClaimStatement(p)
	now := UTC(p.Now)
	args := []any{f.Concurrency, f.Type, pgdialect.Array(keys), pgdialect.Array(ns)}
	args = append(args, c.SetArgs...)
	args = append(args, f.Type, now, p.Group)
	return `WITH k AS (
			SELECT u.key, LEAST(u.freed, ? - (SELECT count(*) FROM workflows AS h WHERE h.type = ? AND h.concurrency_key = u.key
				AND h.` + flowHeld + `)) AS n
			FROM unnest(?::text[], ?::int[]) AS u(key, freed))
		UPDATE workflows AS t SET ` + c.Set + ` WHERE t.id = ANY(ARRAY(
			SELECT w.id FROM k CROSS JOIN LATERAL (
				SELECT id, executor_group FROM workflows WHERE type = ? AND concurrency_key = k.key AND ` + flowIndexed + ` AND status = 'CREATED'
				AND next_activation IS NOT NULL AND next_activation <= ? AND executor_id IS NULL
				ORDER BY priority DESC, next_activation, id LIMIT GREATEST(k.n, 0) FOR UPDATE SKIP LOCKED) AS w
			WHERE w.executor_group = ?))
		RETURNING t.*`, args
}
