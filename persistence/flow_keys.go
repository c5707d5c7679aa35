// Key-driven flow claims: when keys of a flow-controlled type are full, their queues are never
// read; the claim reads the holders from an index of holders alone and the oldest due workflows
// of the keys with free slots, one index probe a key.

package persistence

import (
	"context"
	"sort"
	"time"
)

// maxWalkedKeys bounds the keys one flow claim walks to find keys with free slots; the next claim
// walks on from where it stopped.
const maxWalkedKeys = 512

// flowHolders counts the workflows that hold a slot of each of the type's keys ("": the workflows
// without a key), of keys alone when keys is not nil. Keyed and keyless holders are counted apart:
// each reads an index of its own (workflows_flow_holders_idx, workflows_flow_keyless_idx).
func (s *Store) flowHolders(ctx context.Context, f FlowSpec, keys []string) (map[string]int, error) {
	holders := map[string]int{}
	if f.Concurrency == 0 {
		return holders, nil
	}
	keyed, keyless := keys == nil, keys == nil
	var named []string
	for _, k := range keys {
		if k == "" {
			keyless = true
		} else {
			keyed, named = true, append(named, k)
		}
	}
	if keyed {
		q, args := flowHoldersQuery(s.Kind(), f, named)
		var counts []struct {
			Key *string `bun:"concurrency_key"`
			N   int     `bun:"n"`
		}
		if err := s.idb.NewRaw(q, args...).Scan(ctx, &counts); err != nil {
			return nil, err
		}
		for _, c := range counts {
			holders[flowKey(c.Key)] = c.N
		}
	}
	if keyless {
		var n int
		if err := s.idb.NewRaw("SELECT count(*) FROM workflows WHERE type = ? AND "+flowKeyless+" AND "+flowHolding(f.StepScope),
			f.Type).Scan(ctx, &n); err != nil {
			return nil, err
		}
		if n > 0 {
			holders[""] = n
		}
	}
	return holders, nil
}

// flowHoldersQuery counts the holders of each of a type's keys (of named alone when it is not
// nil). MariaDB and MySQL, which have no partial indexes, read the generated flow_holder (the key
// of a workflow that may hold its slot) through workflows_flow_holder_idx: only the holders'
// entries, where workflows_flow_idx (type, key, status) made them read every keyed workflow of
// the type.
func flowHoldersQuery(kind Kind, f FlowSpec, named []string) (string, []any) {
	col, where := "concurrency_key", heldBy(kind)
	if kind == KindMySQL {
		col = "flow_holder"
	}
	q, args := "SELECT "+col+" AS concurrency_key, count(*) AS n FROM workflows WHERE type = ? AND "+where+" AND "+flowHolding(f.StepScope), []any{f.Type}
	if named != nil {
		q, args = q+" AND "+col+" IN (?)", append(args, bunIn(named))
	}
	return q + " GROUP BY " + col, args
}

// heldBy is flowHeld as kind reads it from an index of the holders alone: MariaDB and MySQL from
// workflows_flow_holder_idx (type, flow_holder), the others from the partial
// workflows_flow_holders_idx.
func heldBy(kind Kind) string {
	if kind == KindMySQL {
		return "flow_holder IS NOT NULL"
	}
	return flowHeld
}

// keyDriven reports whether a flow claim reads candidates key by key: when a key is full and
// its workflows only wait (strategy QUEUE), the oldest due workflows may all be its own.
func keyDriven(f FlowSpec, holders map[string]int) bool {
	if f.Concurrency == 0 || f.CancelNewest || f.CancelInProgress {
		return false
	}
	for _, n := range holders {
		if n >= f.Concurrency {
			return true
		}
	}
	return false
}

// freeHeads asks, for each of keys whose slots are not all taken (up to most keys), for as many
// of its oldest due workflows as it has free slots, at most limit.
func freeHeads(f FlowSpec, holders map[string]int, keys []string, most, limit int) []keyHead {
	var heads []keyHead
	for _, k := range keys {
		if len(heads) == most {
			break
		}
		if free := f.Concurrency - holders[k]; free > 0 {
			heads = append(heads, keyHead{key: k, n: min(free, limit)})
		}
	}
	return heads
}

// flowKeyCandidates reads a key-driven claim's candidates: the oldest due workflows of the keys
// with free slots, walking the type's keys round from the cursor (at most maxWalkedKeys), the
// due workflows without a key when their pool has room, and under WORKFLOW scope the holders that
// are due again (they run on in their slots). It returns them in turns, the last key it walked,
// and whether the round of walks it belongs to has keys left: a round begins with a claim that
// follows none and ends when the walks have gone round every key once, so that one wake-up or
// poll reads each key once, not again and again.
func (s *Store) flowKeyCandidates(ctx context.Context, p WorkflowClaimParams, f FlowSpec, holders map[string]int,
	now time.Time) ([]*Workflow, string, bool, error) {
	cursor := s.flowCursor(f.Type)
	keys, last, wrapped, err := s.flowKeysRound(ctx, f.Type, cursor, maxWalkedKeys)
	if err != nil {
		return nil, "", false, err
	}
	more := s.flowRoundGoesOn(f.Type, cursor, last, wrapped, len(keys))
	heads := freeHeads(f, holders, append(keys, ""), p.Limit, p.Limit)
	var cands []*Workflow
	if len(heads) > 0 {
		if cands, err = s.flowHeads(ctx, p, f, heads, now); err != nil {
			return nil, "", false, err
		}
	}
	if !f.StepScope {
		due, err := s.flowDueHolders(ctx, p, f, holders, now)
		if err != nil {
			return nil, "", false, err
		}
		seen := make(map[int64]bool, len(cands))
		for _, c := range cands {
			seen[c.ID] = true
		}
		for _, d := range due {
			if !seen[d.ID] {
				cands = append(cands, d)
			}
		}
	}
	if last == "" {
		last = cursor
	}
	return inTurns(cands, cursor), last, more, nil
}

// flowDueHolders reads the holders of a WORKFLOW-scope type whose next step is due: they hold
// their slots already, full key or not.
func (s *Store) flowDueHolders(ctx context.Context, p WorkflowClaimParams, f FlowSpec, holders map[string]int, now time.Time) ([]*Workflow, error) {
	keyed, keyless := false, holders[""] > 0
	for k, n := range holders {
		keyed = keyed || (k != "" && n > 0)
	}
	due := ` AND status IN ('IN_PROGRESS', 'WAITING') AND executor_group = ? AND next_activation IS NOT NULL AND next_activation <= ?
		AND executor_id IS NULL ORDER BY priority DESC, next_activation, id LIMIT ?`
	var out []*Workflow
	for _, part := range []struct {
		on   bool
		pred string
	}{{keyed, heldBy(s.Kind())}, {keyless, flowKeyless}} {
		if !part.on {
			continue
		}
		var ws []*Workflow
		if err := s.idb.NewRaw("SELECT "+flowCols(f)+" FROM workflows WHERE type = ? AND "+part.pred+due,
			f.Type, p.Group, now, p.Limit).Scan(ctx, &ws); err != nil {
			return nil, err
		}
		out = append(out, ws...)
	}
	sort.SliceStable(out, func(i, j int) bool { return claimsBefore(out[i], out[j]) })
	return out, nil
}

// flowRoundGoesOn records a walk of n keys from cursor to last (wrapped: past the type's last key
// and on from its first) and reports whether its round has keys left to walk.
func (s *Store) flowRoundGoesOn(typ, cursor, last string, wrapped bool, n int) bool {
	w := s.flowWalkOf(typ)
	start := cursor
	if w.start != nil {
		start = *w.start
	}
	// The walk passed the round's start when it went from before it to at or after it, or went
	// round the end and on to it.
	passed := (cursor < start && last >= start) || (wrapped && (cursor < start || last >= start))
	w.start = &start
	if n == 0 || n < maxWalkedKeys || passed {
		w.start = nil
	}
	flowCursors.Store(flowCursorKey{s.db, typ}, w)
	return w.start != nil
}
