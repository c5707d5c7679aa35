// Flow control's storage: the limits set at run time, and the claim of a flow-controlled type,
// which counts the holders of each concurrency key and the rate of each rate key under a lock of
// its own per type, so that no limit is exceeded however many nodes claim at once.

package persistence

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"
)

// FlowControlRow is a flow control set at run time for a type (it wins over the definition's).
type FlowControlRow struct {
	bun.BaseModel `bun:"table:flow_controls,alias:fc"`

	Type     string          `bun:"type,pk"`
	Settings json.RawMessage `bun:"settings,type:jsonb,notnull"`
	Updated  time.Time       `bun:"updated,notnull"`
}

// flowLock is the row a type's flow claims lock in turn.
type flowLock struct {
	bun.BaseModel `bun:"table:flow_locks"`

	Type string `bun:"type,pk"`
}

// flowRate is a rate limit's theoretical arrival time for one key of a type (GCRA).
type flowRate struct {
	bun.BaseModel `bun:"table:flow_rates"`

	Type    string    `bun:"type,pk"`
	RateKey string    `bun:"rate_key,pk"`
	TAT     time.Time `bun:"tat,notnull"`
}

// FlowControlList returns the run-time flow controls, by type.
func (s *Store) FlowControlList(ctx context.Context) ([]*FlowControlRow, error) {
	var out []*FlowControlRow
	if err := s.idb.NewSelect().Model(&out).Order("type").Scan(ctx); err != nil {
		return nil, fmt.Errorf("error listing flow controls: %w", err)
	}
	return out, nil
}

// FlowControlSet stores a type's run-time flow control, replacing the one it had.
func (s *Store) FlowControlSet(ctx context.Context, row *FlowControlRow) error {
	row.Updated = UTC(row.Updated)
	return s.Tx(ctx, func(ctx context.Context, tx *Store) error {
		if _, err := tx.idb.NewDelete().Model((*FlowControlRow)(nil)).Where("type = ?", row.Type).Exec(ctx); err != nil {
			return fmt.Errorf("error setting the flow control of %s: %w", row.Type, err)
		}
		if _, err := tx.idb.NewInsert().Model(row).Exec(ctx); err != nil {
			return fmt.Errorf("error setting the flow control of %s: %w", row.Type, err)
		}
		return nil
	})
}

// FlowControlDelete removes a type's run-time flow control; it reports whether there was one.
func (s *Store) FlowControlDelete(ctx context.Context, typ string) (bool, error) {
	res, err := s.idb.NewDelete().Model((*FlowControlRow)(nil)).Where("type = ?", typ).Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("error clearing the flow control of %s: %w", typ, err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// FlowSpec is what a flow claim holds a type to.
type FlowSpec struct {
	Type string
	// Concurrency is the number of slots per concurrency key (0: no concurrency limit).
	Concurrency int
	// StepScope: a workflow holds a slot only while a step of it runs (its remote task included);
	// otherwise from its first claim until it ends or is paused.
	StepScope bool
	// CancelNewest cancels a workflow that never ran when its key is full; CancelInProgress
	// cancels the key's oldest holder for it instead. Neither: it waits.
	CancelNewest, CancelInProgress bool
	// RateLimit step starts per RatePeriod per rate key (0: no rate limit).
	RateLimit  int
	RatePeriod time.Duration
	// RateKey gives a workflow's rate key from its input (nil: one rate for the type).
	RateKey func(input json.RawMessage) string
}

// FlowCancel is a workflow a flow claim wants cancelled, and why.
type FlowCancel struct {
	ID     int64
	Reason string
}

// FlowClaimResult is what a flow claim took and decided.
type FlowClaimResult struct {
	Claimed []*Workflow
	// Cancel are workflows the strategies cancel (the caller cancels them).
	Cancel []FlowCancel
	// NextSlot, when not zero, is when a workflow held back by a rate limit may run.
	NextSlot time.Time
	// Throttled counts the due workflows a rate limit held back.
	Throttled int
	// More: the claim looked at some of the type's keys only (a walk's round has keys left, or it
	// read a full page of the oldest due workflows under a concurrency limit); the next claim of
	// every key goes on.
	More bool
	// Missed are the keys of workflows the claim chose but could not take (another transaction
	// held them a moment): a claim for those keys may take them soon.
	Missed []string
}

// missedKeys returns the keys of the chosen workflows (ids, among cands) that claimed lacks.
func missedKeys(cands []*Workflow, ids []int64, claimed []*Workflow) []string {
	if len(claimed) == len(ids) {
		return nil
	}
	took := make(map[int64]bool, len(claimed))
	for _, w := range claimed {
		took[w.ID] = true
	}
	chosen := make(map[int64]bool, len(ids))
	for _, id := range ids {
		chosen[id] = !took[id]
	}
	var out []string
	for _, c := range cands {
		if chosen[c.ID] {
			out = append(out, flowKey(c.ConcurrencyKey))
		}
	}
	return out
}

// flowHolding is the condition of a workflow holding its key's slot.
func flowHolding(step bool) string {
	if step {
		return `(status = 'EXECUTING' OR (status = 'WAITING' AND EXISTS (SELECT 1 FROM remote_tasks AS rt
			WHERE rt.workflow_id = workflows.id AND rt.status IN ('PENDING', 'LEASED'))))`
	}
	return `status IN ('IN_PROGRESS', 'EXECUTING', 'WAITING')`
}

// maxExcludedKeys bounds the full keys a flow claim names in its candidate query; past it the
// others are skipped as they are read.
const maxExcludedKeys = 2000

// FlowKey is the workflow's concurrency key as flow control counts it: "" without one.
func (w *Workflow) FlowKey() string { return flowKey(w.ConcurrencyKey) }

// flowKey is a key as flow control counts it: "" for workflows without one.
func flowKey(k *string) string {
	if k == nil {
		return ""
	}
	return *k
}

// ensureFlowLock makes the row a type's flow claims lock (once per Store and type).
func (s *Store) ensureFlowLock(ctx context.Context, typ string) error {
	if s.flowLockSeen(typ) {
		return nil
	}
	var n int
	if err := s.idb.NewRaw("SELECT count(*) FROM flow_locks WHERE type = ?", typ).Scan(ctx, &n); err != nil {
		return err
	}
	if n == 0 {
		if _, err := s.idb.NewInsert().Model(&flowLock{Type: typ}).Exec(ctx); err != nil && !s.dialect.uniqueViolation(err) {
			return err
		}
	}
	s.flowLockMade(typ)
	return nil
}

// WorkflowFlowClaim claims due workflows of one flow-controlled type (p.Types is ignored) as
// WorkflowClaim does, holding them to f: at most f.Concurrency holders per concurrency key, and
// f.RateLimit step starts per f.RatePeriod per rate key. Claims of one type run one at a time
// (a row lock of the type's; SQLite's one writer), so the counts they read stay true until they
// commit. Keys whose slots are free are served in the order of their oldest due workflow, so a
// key with a long queue does not hold back the others.
func (s *Store) WorkflowFlowClaim(ctx context.Context, p WorkflowClaimParams, f FlowSpec) (FlowClaimResult, error) {
	return s.flowClaim(ctx, p, f, nil)
}

// WorkflowFlowClaimKeys is WorkflowFlowClaim for the given keys of the type alone ("": its
// workflows without a key), as many of each key's oldest due workflows as it has free slots: a
// node claims this way for the keys whose slots its own completions just freed, reading neither
// the other keys nor their queues.
func (s *Store) WorkflowFlowClaimKeys(ctx context.Context, p WorkflowClaimParams, f FlowSpec, keys []string) (FlowClaimResult, error) {
	if keys == nil {
		keys = []string{}
	}
	return s.flowClaim(ctx, p, f, keys)
}

// flowClaim is a flow claim of keys (nil: of every key of the type).
func (s *Store) flowClaim(ctx context.Context, p WorkflowClaimParams, f FlowSpec, keys []string) (FlowClaimResult, error) {
	var res FlowClaimResult
	if p.Limit <= 0 || (keys != nil && len(keys) == 0) {
		return res, nil
	}
	if err := s.ensureFlowLock(ctx, f.Type); err != nil {
		return res, fmt.Errorf("error claiming workflows of %s: %w", f.Type, err)
	}
	now := UTC(p.Now)
	err := s.Tx(ctx, func(ctx context.Context, tx *Store) error {
		res = FlowClaimResult{}
		if err := tx.AsyncCommit(ctx); err != nil {
			return err
		}
		if lock := tx.rowLock(false); lock != "" {
			var t []string
			if err := tx.idb.NewRaw("SELECT type FROM flow_locks WHERE type = ? FOR "+lock, f.Type).Scan(ctx, &t); err != nil {
				return err
			}
		}
		holders, err := tx.flowHolders(ctx, f, keys)
		if err != nil {
			return err
		}
		var cands []*Workflow
		last := s.flowCursor(f.Type)
		rates := flowRates{f: f, now: now, tats: map[string]time.Time{}}
		scan, capped, readFull := flowCandidateLimit(p, f, holders), false, false
		if f.RateLimit > 0 && f.RateKey == nil && f.Concurrency == 0 && keys == nil {
			// One rate for the type and nothing else: its bucket says how many may start, so the
			// claim reads that many and one more (whether one is held back, and until when).
			if err := rates.loadKeys(ctx, tx, []string{""}); err != nil {
				return err
			}
			if n := rates.available(""); n < p.Limit {
				p.Limit, scan, capped = n, n+1, true
			}
		}
		switch {
		case keys != nil:
			if heads := freeHeads(f, holders, keys, len(keys), p.Limit); len(heads) > 0 {
				if cands, err = tx.flowHeads(ctx, p, f, heads, now); err != nil {
					return err
				}
			}
			cands = inTurns(cands, last)
		case keyDriven(f, holders):
			if cands, last, res.More, err = tx.flowKeyCandidates(ctx, p, f, holders, now); err != nil {
				return err
			}
		default:
			if cands, err = tx.flowCandidates(ctx, p, f, holders, scan, now); err != nil {
				return err
			}
			// A full read under a concurrency limit may have left keys with free slots unread (it
			// reads a few limits' worth, flowFair a few more keys): the next claim goes on, walking
			// the keys once this one's are full.
			readFull = f.Concurrency > 0 && len(cands) == scan
			if cands, last, err = tx.flowFair(ctx, p, f, cands, holders, scan, now); err != nil {
				return err
			}
		}
		if f.RateLimit > 0 && !capped {
			if err := rates.load(ctx, tx, cands); err != nil {
				return err
			}
		}
		var ids []int64
		displace := map[string]int{} // a full key -> newcomers waiting for its oldest holders to go
		for _, c := range cands {
			if len(ids) == p.Limit {
				if capped && !rates.take(c) {
					res.Throttled++ // the bucket is empty: this one waits for its next slot
				}
				break
			}
			key := flowKey(c.ConcurrencyKey)
			needSlot := f.Concurrency > 0 && (f.StepScope || c.Status == StatusCreated)
			if needSlot && holders[key] >= f.Concurrency {
				switch {
				case f.CancelNewest && c.Status == StatusCreated && c.Started == nil: // never ran: a new start
					res.Cancel = append(res.Cancel, FlowCancel{ID: c.ID, Reason: fmt.Sprintf("concurrency %s is full (%d of %d running)",
						keyText(key), holders[key], f.Concurrency)})
				case f.CancelInProgress && c.Status == StatusCreated && c.Started == nil:
					displace[key]++
				}
				continue
			}
			if f.RateLimit > 0 && !rates.take(c) {
				res.Throttled++
				continue
			}
			if needSlot {
				holders[key]++
			}
			ids = append(ids, c.ID)
			last = key
		}
		if keys == nil {
			s.setFlowCursor(f.Type, last)
		}
		for key, n := range displace {
			victims, err := tx.flowOldestHolders(ctx, f, key, n)
			if err != nil {
				return err
			}
			for _, id := range victims {
				res.Cancel = append(res.Cancel, FlowCancel{ID: id, Reason: fmt.Sprintf("cancelled for a newer workflow of %s", keyText(key))})
			}
		}
		res.NextSlot = rates.next
		if f.RateLimit > 0 {
			if err := rates.save(ctx, tx); err != nil {
				return err
			}
		}
		if len(ids) == 0 {
			return nil
		}
		if res.Claimed, err = tx.claimIDs(ctx, p, ids); err != nil {
			return err
		}
		// Only a claim that took some goes on: workflows another transaction holds locked are
		// left to the hints of the keys it missed, not claimed for again and again.
		res.More = res.More || (readFull && len(res.Claimed) > 0)
		res.Missed = missedKeys(cands, ids, res.Claimed)
		return nil
	})
	if err != nil {
		return FlowClaimResult{}, fmt.Errorf("error claiming workflows of %s: %w", f.Type, err)
	}
	return res, nil
}

// keyText names a concurrency key in a reason.
func keyText(key string) string {
	if key == "" {
		return "of workflows without a key"
	}
	return "key " + key
}

// flowCandidates reads the due workflows of a flow-controlled type in claim order, leaving out
// those waiting for a slot of a full key (when they only wait).
func (s *Store) flowCandidates(ctx context.Context, p WorkflowClaimParams, f FlowSpec, holders map[string]int, scan int, now time.Time) ([]*Workflow, error) {
	lock := ""
	if l := s.rowLock(true); l != "" {
		lock = " FOR " + l
	}
	var out []*Workflow
	query, args := flowCandidatesQuery(s.Kind(), lock, p, f, holders, scan, now)
	err := s.idb.NewRaw(query, args...).Scan(ctx, &out)
	return out, err
}

// flowCandidatesQuery is flowCandidates' statement. MariaDB and MySQL name claim_group, the
// generated column of workflows_due_idx (claim group, type, claim order): without it they read
// every workflow of the type and sorted them (50,000 rows for a claim of 200).
func flowCandidatesQuery(kind Kind, lock string, p WorkflowClaimParams, f FlowSpec, holders map[string]int, scan int, now time.Time) (string, []any) {
	cols := flowCols(f)
	where := `executor_group = ? AND status IN (?) AND next_activation IS NOT NULL AND next_activation <= ?
		AND executor_id IS NULL AND type = ? AND EXISTS (SELECT 1 FROM executors AS e WHERE e.id = ? AND e.stopped IS NULL)`
	args := []any{p.Group, bunIn(claimableStatuses), now, f.Type, p.ExecutorID}
	if kind == KindMySQL {
		where, args = "claim_group = ? AND "+where, append([]any{p.Group}, args...)
	}
	if f.Concurrency > 0 && !f.CancelNewest && !f.CancelInProgress {
		var full []string
		keyless := false
		for k, n := range holders {
			if n < f.Concurrency {
				continue
			}
			if k == "" {
				keyless = true
			} else if len(full) < maxExcludedKeys {
				full = append(full, k)
			}
		}
		var ex []string
		if keyless {
			ex = append(ex, "concurrency_key IS NOT NULL")
		}
		if len(full) > 0 {
			ex = append(ex, "(concurrency_key IS NULL OR concurrency_key NOT IN (?))")
			args = append(args, bunIn(full))
		}
		if len(ex) > 0 {
			cond := strings.Join(ex, " AND ")
			if !f.StepScope {
				cond = "(status <> 'CREATED' OR (" + cond + "))" // holders run on
			}
			where += " AND " + cond
		}
	}
	return "SELECT " + cols + " FROM workflows WHERE " + where + " ORDER BY priority DESC, next_activation, id LIMIT ?" + lock, append(args, scan)
}

// flowCandidateLimit is how many due workflows a flow claim reads in claim order. Under a
// concurrency limit whose workflows queue, a key takes at most the limit and its holders run on,
// so it reads four limits' worth and the holders' number (at least 64): the oldest workflows
// may all be one key's, and the claim took 8,000 of one key's queue, locked on MariaDB, for the
// 50 it could start. flowFair adds the heads of other keys when the read was full.
func flowCandidateLimit(p WorkflowClaimParams, f FlowSpec, holders map[string]int) int {
	n := max(4*p.Limit, 64)
	if f.Concurrency > 0 && !f.CancelNewest && !f.CancelInProgress {
		held := 0
		for _, h := range holders {
			held += h
		}
		n = min(n, max(64, 4*f.Concurrency+held))
	}
	return n
}

// flowOldestHolders returns up to n of a key's holders, oldest first: those CANCEL_IN_PROGRESS
// cancels.
func (s *Store) flowOldestHolders(ctx context.Context, f FlowSpec, key string, n int) ([]int64, error) {
	cond, args := "concurrency_key = ?", []any{f.Type, key}
	if key == "" {
		cond, args = "concurrency_key IS NULL", []any{f.Type}
	}
	var ids []int64
	err := s.idb.NewRaw("SELECT id FROM workflows WHERE type = ? AND "+cond+" AND "+flowHolding(f.StepScope)+
		" ORDER BY started, id LIMIT ?", append(args, n)...).Scan(ctx, &ids)
	return ids, err
}

// ensuredFlowLocks are the (database, type) pairs whose flow_locks row exists.
var ensuredFlowLocks sync.Map

type flowLockKey struct {
	db  *bun.DB
	typ string
}

func (s *Store) flowLockSeen(typ string) bool {
	_, ok := ensuredFlowLocks.Load(flowLockKey{s.db, typ})
	return ok
}

func (s *Store) flowLockMade(typ string) { ensuredFlowLocks.Store(flowLockKey{s.db, typ}, true) }

// FlowKeyCount is how many workflows of one concurrency key hold a slot, and how many are due and
// wait for one.
type FlowKeyCount struct {
	Key     *string `bun:"concurrency_key"`
	Running int     `bun:"running"`
	Waiting int     `bun:"waiting"`
}

// FlowKeyCounts counts, per concurrency key of a type, its holders and the due workflows waiting
// for a slot (as a flow claim counts them), keys ordered. The keyed workflows' holders are counted
// from workflows_flow_holders_idx and their waiting workflows from workflows_flow_due_idx, each by
// key, in one statement; the workflows without a key from workflows_flow_keyless_idx.
func (s *Store) FlowKeyCounts(ctx context.Context, typ string, step bool, now time.Time) ([]*FlowKeyCount, error) {
	waiting := "status = 'CREATED'"
	if step {
		waiting = "status IN (?) AND NOT " + flowHolding(true)
	}
	waiting = "(" + waiting + " AND next_activation IS NOT NULL AND next_activation <= ? AND executor_id IS NULL)"
	var args []any
	if step {
		args = append(args, bunIn(claimableStatuses))
	}
	args = append(args, UTC(now))
	count := func(query string, args ...any) ([]*FlowKeyCount, error) {
		var part []*FlowKeyCount
		if err := s.idb.NewRaw(query, args...).Scan(ctx, &part); err != nil {
			return nil, fmt.Errorf("error counting the flow of %s: %w", typ, err)
		}
		return part, nil
	}
	out, err := count(`SELECT concurrency_key,
			SUM(CASE WHEN `+flowHolding(step)+` THEN 1 ELSE 0 END) AS running,
			SUM(CASE WHEN `+waiting+` THEN 1 ELSE 0 END) AS waiting
		FROM workflows WHERE type = ? AND `+flowKeyless+` GROUP BY concurrency_key`, append(args, typ)...)
	if err != nil {
		return nil, err
	}
	keyed, err := count(`SELECT concurrency_key, SUM(running) AS running, SUM(waiting) AS waiting FROM (
			SELECT concurrency_key, count(*) AS running, 0 AS waiting FROM workflows WHERE type = ? AND `+flowHeld+` AND `+flowHolding(step)+`
			GROUP BY concurrency_key
			UNION ALL
			SELECT concurrency_key, 0, count(*) FROM workflows WHERE `+waiting+` AND type = ? AND `+flowIndexed+` GROUP BY concurrency_key
		) AS c GROUP BY concurrency_key ORDER BY concurrency_key`, append(append([]any{typ}, args...), typ)...)
	if err != nil {
		return nil, err
	}
	return append(out, keyed...), nil
}

// WorkflowDebounce folds a start into the workflow of a type and debounce key that has not run
// yet (CREATED, not claimed): its input becomes input and it becomes due at due. It returns that
// workflow, or nil when there is none.
func (s *Store) WorkflowDebounce(ctx context.Context, typ, key string, input json.RawMessage, due, now time.Time) (*Workflow, error) {
	lock := ""
	if l := s.rowLock(false); l != "" {
		lock = " FOR " + l
	}
	var ids []int64
	if err := s.idb.NewRaw("SELECT id FROM workflows WHERE type = ? AND debounce_key = ? AND status = 'CREATED' AND executor_id IS NULL AND started IS NULL ORDER BY id LIMIT 1"+lock,
		typ, key).Scan(ctx, &ids); err != nil {
		return nil, fmt.Errorf("error debouncing a start of %s: %w", typ, err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	if _, err := s.idb.NewRaw("UPDATE workflows SET input = ?, next_activation = ?, modified = ?, version = version + 1 WHERE id = ?",
		string(input), UTC(due), UTC(now), ids[0]).Exec(ctx); err != nil {
		return nil, fmt.Errorf("error debouncing a start of %s: %w", typ, err)
	}
	return s.WorkflowGet(ctx, ids[0])
}
