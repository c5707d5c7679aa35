// Fairness in a flow claim: when many keys of a flow-controlled type have work queued, the claim
// serves them in turn, so a key with a long queue does not hold back another key's first step.

package persistence

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
)

// maxRotationKeys bounds the keys one flow claim looks up past its oldest candidates.
const maxRotationKeys = 32

// flowCursors are, per (database, type), where flow claims walk the type's keys (a flowWalk).
var flowCursors sync.Map

// flowWalk is where flow claims walk a type's keys: from the last key a claim looked up (the next
// claim goes on from there, round the keys), and, while a round of key walks is under way, the
// key after which it began.
type flowWalk struct {
	cursor string
	start  *string
}

type flowCursorKey struct {
	db  *bun.DB
	typ string
}

// flowFair puts a flow claim's candidates in turns over their keys, after adding, when the oldest
// candidates may not show every key with due work, the oldest due workflow of each of the next
// keys round the type's keys. A turn takes one workflow of each key before a key's second, keys in
// turn from the one after the type's cursor (the key last served) round to it; a key's own
// workflows keep the claim order (priority, due time). scanned is how many rows the candidate
// query could return: when fewer came back, every due workflow is among them. It returns the
// ordered candidates and the last key it looked up (the cursor when none is claimed).
func (s *Store) flowFair(ctx context.Context, p WorkflowClaimParams, f FlowSpec, cands []*Workflow, holders map[string]int,
	scanned int, now time.Time) ([]*Workflow, string, error) {
	cursor := s.flowCursor(f.Type)
	keys := map[string]bool{}
	for _, c := range cands {
		keys[flowKey(c.ConcurrencyKey)] = true
	}
	last := cursor
	if len(cands) == scanned && len(keys) < p.Limit {
		more, probed, err := s.flowRotation(ctx, p, f, cursor, holders, keys, now)
		if err != nil {
			return nil, "", err
		}
		cands = append(cands, more...)
		if probed != "" {
			last = probed
		}
	}
	return inTurns(cands, cursor), last, nil
}

func (s *Store) flowWalkOf(typ string) flowWalk {
	if v, ok := flowCursors.Load(flowCursorKey{s.db, typ}); ok {
		return v.(flowWalk)
	}
	return flowWalk{}
}

func (s *Store) flowCursor(typ string) string { return s.flowWalkOf(typ).cursor }

func (s *Store) setFlowCursor(typ, key string) {
	w := s.flowWalkOf(typ)
	w.cursor = key
	flowCursors.Store(flowCursorKey{s.db, typ}, w)
}

// inTurns orders workflows in turns over their keys: the first of every key, then the second...,
// keys from the one after cursor round to it.
func inTurns(ws []*Workflow, cursor string) []*Workflow {
	sort.SliceStable(ws, func(i, j int) bool {
		ki, kj := flowKey(ws[i].ConcurrencyKey), flowKey(ws[j].ConcurrencyKey)
		if ki != kj {
			wi, wj := ki <= cursor, kj <= cursor // keys up to the cursor come round last
			if wi != wj {
				return !wi
			}
			return ki < kj
		}
		return claimsBefore(ws[i], ws[j])
	})
	var order []string
	byKey := map[string][]*Workflow{}
	for _, w := range ws {
		k := flowKey(w.ConcurrencyKey)
		if byKey[k] == nil {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], w)
	}
	out := make([]*Workflow, 0, len(ws))
	for turn := 0; len(out) < len(ws); turn++ {
		for _, k := range order {
			if turn < len(byKey[k]) {
				out = append(out, byKey[k][turn])
			}
		}
	}
	return out
}

// claimsBefore is the claim order: priority first, then due time, then ID.
func claimsBefore(a, b *Workflow) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	if !a.NextActivation.Equal(*b.NextActivation) {
		return a.NextActivation.Before(*b.NextActivation)
	}
	return a.ID < b.ID
}

// flowRotation returns the oldest due workflow of each of the next keys with claimable work after
// cursor (going round to the first key), leaving out keys in seen and full keys whose workflows
// would only wait, and the last key it looked up.
func (s *Store) flowRotation(ctx context.Context, p WorkflowClaimParams, f FlowSpec, cursor string, holders map[string]int,
	seen map[string]bool, now time.Time) ([]*Workflow, string, error) {
	keys, last, _, err := s.flowKeysRound(ctx, f.Type, cursor, min(p.Limit, maxRotationKeys))
	if err != nil {
		return nil, "", err
	}
	var served []keyHead
	for _, k := range keys {
		if seen[k] || (f.Concurrency > 0 && !f.CancelNewest && !f.CancelInProgress && holders[k] >= f.Concurrency) {
			continue // among the candidates already, or full (its workflows would only wait)
		}
		served = append(served, keyHead{key: k, n: 1})
	}
	if len(served) == 0 {
		return nil, last, nil
	}
	out, err := s.flowHeads(ctx, p, f, served, now)
	return out, last, err
}

// flowKeysRound returns up to n keys with claimable work after cursor, going round to the first
// key, the last one, and whether it went round (past the last key of the type).
func (s *Store) flowKeysRound(ctx context.Context, typ, cursor string, n int) ([]string, string, bool, error) {
	keys, err := s.flowKeysAfter(ctx, typ, cursor, n)
	if err != nil {
		return nil, "", false, err
	}
	wrapped := len(keys) < n
	if wrapped && cursor != "" {
		round, err := s.flowKeysAfter(ctx, typ, "", n-len(keys))
		if err != nil {
			return nil, "", false, err
		}
		for _, k := range round {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	last := ""
	if len(keys) > 0 {
		last = keys[len(keys)-1]
	}
	return keys, last, wrapped, nil
}

// keyHead asks for the n oldest due workflows of a key ("": the workflows without one).
type keyHead struct {
	key string
	n   int
}

// flowHeads reads the oldest due workflows of each key, in claim order, one index probe a key
// (workflows_flow_due_idx where the database has partial indexes; the workflows without a key from
// workflows_flow_keyless_idx): on PostgreSQL in one statement whatever the number of keys; elsewhere
// the keys that want one workflow in one statement, the others in statements of at most
// headsPerStatement keys.
func (s *Store) flowHeads(ctx context.Context, p WorkflowClaimParams, f FlowSpec, heads []keyHead, now time.Time) ([]*Workflow, error) {
	var out []*Workflow
	if s.Kind() == KindPostgres {
		var keyed []keyHead
		for _, h := range heads {
			if h.key == "" {
				query, args := keyHeads(p, f, []keyHead{h}, now, false)
				if err := s.idb.NewRaw(query, args...).Scan(ctx, &out); err != nil {
					return nil, err
				}
			} else {
				keyed = append(keyed, h)
			}
		}
		if len(keyed) > 0 {
			var ws []*Workflow
			query, args := keyHeadsLateral(p, f, keyed, now)
			if err := s.idb.NewRaw(query, args...).Scan(ctx, &ws); err != nil {
				return nil, err
			}
			out = append(out, ws...)
		}
		return out, nil
	}
	ones, heads := splitOnes(heads)
	if len(ones) > 0 {
		query, args := keyHeadsOfOnes(p, f, ones, now, s.Kind() == KindMySQL)
		if err := s.idb.NewRaw(query, args...).Scan(ctx, &out); err != nil {
			return nil, err
		}
	}
	for len(heads) > 0 {
		n := min(len(heads), headsPerStatement)
		var ws []*Workflow
		query, args := keyHeads(p, f, heads[:n], now, s.Kind() == KindMySQL)
		if err := s.idb.NewRaw(query, args...).Scan(ctx, &ws); err != nil {
			return nil, err
		}
		out, heads = append(out, ws...), heads[n:]
	}
	return out, nil
}

// splitOnes parts heads into the keys that want one workflow (keyHeadsOfOnes reads them) and the
// rest: those that want more, and the workflows without a key.
func splitOnes(heads []keyHead) (ones []string, rest []keyHead) {
	for _, h := range heads {
		if h.key != "" && h.n <= 1 {
			ones = append(ones, h.key)
		} else {
			rest = append(rest, h)
		}
	}
	return ones, rest
}

// headsPerStatement bounds the keys of one UNION ALL of flowHeads (SQLite allows 500 terms of a
// compound SELECT).
const headsPerStatement = 32

// flowCols are the columns a flow claim reads of its candidates.
func flowCols(f FlowSpec) string {
	cols := "id, concurrency_key, status, priority, next_activation, started"
	if f.RateKey != nil {
		cols += ", input"
	}
	return cols
}

// keyHeads is the statement that reads the oldest due workflows of each key, a UNION ALL of one
// probe a key. As in keyHeadsLateral, the group is checked outside each probe: named inside, it
// let SQLite read a key's head through the due index (group, type, claim order), stepping over
// every due workflow of the type's other keys. claimGroup (MariaDB and MySQL, which have no
// partial indexes) names the generated flow_group in each keyed probe and orders by flow_next,
// so that it reads workflows_flow_heads_idx (type, key, flow group, claim order): only the key's
// claimable workflows, in claim order. Without it, a probe read the key's every workflow from
// workflows_flow_idx and sorted them.
func keyHeads(p WorkflowClaimParams, f FlowSpec, heads []keyHead, now time.Time, claimGroup bool) (string, []any) {
	parts := make([]string, len(heads))
	var args []any
	for i, h := range heads {
		which, whichArgs, order := "concurrency_key = ? AND "+flowIndexed, []any{h.key}, "priority DESC, next_activation, id"
		switch {
		case h.key == "":
			which, whichArgs = flowKeyless, nil
		case claimGroup: // flow_next is next_activation where there is a key
			which, whichArgs, order = "concurrency_key = ? AND flow_group = ? AND "+flowIndexed, []any{h.key, p.Group}, "priority DESC, flow_next, id"
		}
		parts[i] = `SELECT ` + flowCols(f) + ` FROM (SELECT ` + flowCols(f) + `, executor_group FROM workflows WHERE type = ? AND ` + which + `
			AND status IN (?) AND next_activation IS NOT NULL AND next_activation <= ? AND executor_id IS NULL
			ORDER BY ` + order + ` LIMIT ?) AS k` + strconv.Itoa(i) + ` WHERE executor_group = ?`
		args = append(append(append(args, f.Type), whichArgs...), bunIn(claimableStatuses), now, max(h.n, 1), p.Group)
	}
	return strings.Join(parts, " UNION ALL "), args
}

// keyHeadsOfOnes is keyHeads on SQLite, MariaDB and MySQL for keys that want their one oldest due
// workflow (a slot handed on under a limit of 1, a key with one free slot): one statement of the
// same shape for any number of keys, given as a JSON array, with a correlated probe of each key's
// index (claimGroup: MariaDB's and MySQL's workflows_flow_heads_idx, as in keyHeads). SQLite
// prepares every statement from its text and MariaDB plans each part of a UNION: the UNION ALL of
// a probe a key cost more to prepare than to run (SQLite: a fifth of the node's CPU with 1,000
// keys of limit 1; MariaDB: 4 ms a statement of 32 keys, against 7 ms for 300 keys this way).
func keyHeadsOfOnes(p WorkflowClaimParams, f FlowSpec, keys []string, now time.Time, claimGroup bool) (string, []any) {
	list, _ := json.Marshal(keys) // strings always marshal
	if claimGroup {
		return `SELECT ` + flowCols(f) + ` FROM workflows WHERE id IN (
			SELECT (SELECT id FROM workflows WHERE type = ? AND concurrency_key = j.k AND flow_group = ? AND ` + flowIndexed + `
				AND status IN (?) AND next_activation IS NOT NULL AND next_activation <= ? AND executor_id IS NULL
				ORDER BY priority DESC, flow_next, id LIMIT 1)
			FROM JSON_TABLE(?, '$[*]' COLUMNS (k VARCHAR(191) PATH '$')) AS j)`,
			[]any{f.Type, p.Group, bunIn(claimableStatuses), now, string(list)}
	}
	return `SELECT ` + flowCols(f) + ` FROM workflows WHERE id IN (
			SELECT (SELECT id FROM workflows WHERE type = ? AND concurrency_key = j.value AND ` + flowIndexed + `
				AND status IN (?) AND next_activation IS NOT NULL AND next_activation <= ? AND executor_id IS NULL
				ORDER BY priority DESC, next_activation, id LIMIT 1)
			FROM json_each(?) AS j) AND executor_group = ?`,
		[]any{f.Type, bunIn(claimableStatuses), now, string(list), p.Group}
}

// keyHeadsLateral is keyHeads on PostgreSQL for keys that are not "": one statement of the same
// text for any number of keys, a lateral probe of each key given as arrays. The group is checked
// outside the probe (a type's workflows share its group): named inside, it would let a planner with
// the statistics of a young table walk the due index for each key.
func keyHeadsLateral(p WorkflowClaimParams, f FlowSpec, heads []keyHead, now time.Time) (string, []any) {
	keys, ns := make([]string, len(heads)), make([]int, len(heads))
	for i, h := range heads {
		keys[i], ns[i] = h.key, max(h.n, 1)
	}
	cols := strings.ReplaceAll(flowCols(f), ", ", ", w.")
	return `SELECT w.` + cols + ` FROM unnest(?::text[], ?::int[]) AS k(key, n) CROSS JOIN LATERAL (
			SELECT ` + flowCols(f) + `, executor_group FROM workflows WHERE type = ? AND concurrency_key = k.key AND ` + flowIndexed + `
			AND status IN (?) AND next_activation IS NOT NULL AND next_activation <= ? AND executor_id IS NULL
			ORDER BY priority DESC, next_activation, id LIMIT k.n) AS w WHERE w.executor_group = ?`,
		[]any{pgdialect.Array(keys), pgdialect.Array(ns), f.Type, bunIn(claimableStatuses), now, p.Group}
}

// flowIndexed is the predicate of the partial index workflows_flow_due_idx (a key's claimable
// workflows in claim order), word for word: SQLite uses a partial index only for a statement that
// names its predicate.
const flowIndexed = `concurrency_key IS NOT NULL AND status IN ('CREATED', 'IN_PROGRESS', 'WAITING')`

// flowKeyless is the predicate of workflows_flow_keyless_idx, word for word.
const flowKeyless = `concurrency_key IS NULL AND status IN ('CREATED', 'IN_PROGRESS', 'EXECUTING', 'WAITING')`

// flowHeld is the predicate of workflows_flow_holders_idx, word for word: the keyed workflows
// that may hold a slot.
const flowHeld = `concurrency_key IS NOT NULL AND status IN ('IN_PROGRESS', 'EXECUTING', 'WAITING')`

// flowKeysAfter returns up to n concurrency keys of a type after the key after, in key order, that
// have claimable workflows: one index probe a key (a loose index scan of workflows_flow_due_idx).
func (s *Store) flowKeysAfter(ctx context.Context, typ, after string, n int) ([]string, error) {
	if s.Kind() == KindMySQL {
		return s.flowKeysAfterOneByOne(ctx, typ, after, n)
	}
	// Each probe must read the index in key order whatever the statistics say. Taken at the end
	// of a drain (a few workflows queued, the index still the size of an earlier backlog) and the
	// table refilled since, they made a probe of the index look dearer than reading the table:
	// each probe then scanned the table and sorted it (4 s a walk of 512 keys over 20,000 queued),
	// or, in a bench run, read the backlog from a bitmap and sorted it (10 s a walk).
	restore, err := plannerWithout(ctx, s, "seqscan", "bitmapscan", "sort")
	if err != nil {
		return nil, err
	}
	var keys []*string
	query, args := flowKeysAfterQuery(typ, after, n)
	err = s.idb.NewRaw(query, args...).Scan(ctx, &keys)
	if rerr := restore(); err == nil {
		err = rerr
	}
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, *k)
	}
	return out, err
}

// flowKeysAfterOneByOne is flowKeysAfter on MariaDB and MySQL: a statement a key, each bounded by
// a constant, read as a seek in workflows_flow_idx (type, key, status), where a key's queued
// workflows (CREATED) come before its ended ones. In the one recursive statement the bound of
// each probe was a column of the recursion, which MariaDB took as no range; and it chose
// workflows_flow_heads_idx, where a key's ended workflows (flow group NULL) come first: a walk
// read every ended workflow of the first key it met (90,000 of a key that had run 90,000).
func (s *Store) flowKeysAfterOneByOne(ctx context.Context, typ, after string, n int) ([]string, error) {
	var out []string
	for len(out) < n {
		var keys []string
		if err := s.idb.NewRaw(`SELECT concurrency_key FROM workflows FORCE INDEX (workflows_flow_idx) WHERE type = ? AND concurrency_key > ? AND `+flowIndexed+
			` AND status IN (?) ORDER BY concurrency_key LIMIT 1`, typ, after, bunIn(claimableStatuses)).Scan(ctx, &keys); err != nil {
			return nil, err
		}
		if len(keys) == 0 {
			break
		}
		after = keys[0]
		out = append(out, after)
	}
	return out, nil
}

// flowKeysAfterQuery is flowKeysAfter's statement and its arguments. Each probe names its order
// and its one row: written as MIN(concurrency_key), the first probe, whose bound is a constant,
// was planned as an aggregate of every key after it when the statistics knew no waiting workflow
// of the type (a type that gained its backlog since the last ANALYZE), and read the whole backlog.
func flowKeysAfterQuery(typ, after string, n int) (string, []any) {
	next := func(bound string) string {
		return `(SELECT concurrency_key FROM workflows WHERE type = ? AND concurrency_key > ` + bound + ` AND ` + flowIndexed +
			` AND status IN (?) ORDER BY concurrency_key LIMIT 1)`
	}
	return `WITH RECURSIVE k (ck, n) AS (
			SELECT ` + next("?") + `, 1
			UNION ALL
			SELECT ` + next("k.ck") + `, k.n + 1
			FROM k WHERE k.ck IS NOT NULL AND k.n < ?)
		SELECT ck FROM k WHERE ck IS NOT NULL`,
		[]any{typ, after, bunIn(claimableStatuses), typ, bunIn(claimableStatuses), n}
}
