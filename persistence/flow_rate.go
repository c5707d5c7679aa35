// Rate limits: the generic cell rate algorithm over one theoretical arrival time (TAT) per type and
// rate key, read and written in the flow claim's transaction.

package persistence

import (
	"context"
	"time"
)

// flowRates is a flow claim's view of its type's rate limits.
type flowRates struct {
	f    FlowSpec
	now  time.Time
	tats map[string]time.Time
	// changed are the keys whose TAT the claim moved.
	changed map[string]bool
	// next is the earliest time a held-back workflow may run (zero: none was held back).
	next time.Time
}

// interval is the time between two step starts of one key; tolerance is how far ahead of it a
// burst may run (a tenth of the limit at once, at least one).
func (r *flowRates) interval() time.Duration  { return r.f.RatePeriod / time.Duration(r.f.RateLimit) }
func (r *flowRates) tolerance() time.Duration { return r.interval() * time.Duration(r.burst()-1) }
func (r *flowRates) burst() int               { return max(1, r.f.RateLimit/10) }

func (r *flowRates) key(w *Workflow) string {
	if r.f.RateKey == nil {
		return ""
	}
	return r.f.RateKey(w.Input)
}

// load reads the TATs of the candidates' keys.
func (r *flowRates) load(ctx context.Context, tx *Store, cands []*Workflow) error {
	seen := map[string]bool{}
	var keys []string
	for _, c := range cands {
		if k := r.key(c); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return r.loadKeys(ctx, tx, keys)
}

// loadKeys reads the TATs of rate keys.
func (r *flowRates) loadKeys(ctx context.Context, tx *Store, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	var rows []*flowRate
	if err := tx.idb.NewSelect().Model(&rows).Where("type = ? AND rate_key IN (?)", r.f.Type, bunIn(keys)).Scan(ctx); err != nil {
		return err
	}
	for _, row := range rows {
		r.tats[row.RateKey] = UTC(row.TAT)
	}
	return nil
}

// available is how many steps of a key may start now.
func (r *flowRates) available(k string) int {
	tat := r.tats[k]
	if tat.Before(r.now) {
		tat = r.now
	}
	ahead := r.now.Add(r.tolerance()).Sub(tat) // how far the key may still run ahead of now
	if ahead < 0 {
		return 0
	}
	return int(ahead/r.interval()) + 1
}

// take reports whether a candidate's key may start a step now, and counts it if so.
func (r *flowRates) take(c *Workflow) bool {
	k := r.key(c)
	tat := r.tats[k]
	if tat.Before(r.now) {
		tat = r.now
	}
	if allowed := tat.Add(-r.tolerance()); allowed.After(r.now) {
		// The claim that wakes for it takes a tenth of the burst at once, not one step a claim.
		wake := allowed.Add(r.interval() * time.Duration(max(1, r.burst()/10)-1))
		if r.next.IsZero() || wake.Before(r.next) {
			r.next = wake
		}
		return false
	}
	r.tats[k] = tat.Add(r.interval())
	if r.changed == nil {
		r.changed = map[string]bool{}
	}
	r.changed[k] = true
	return true
}

// save writes the TATs the claim moved.
func (r *flowRates) save(ctx context.Context, tx *Store) error {
	if len(r.changed) == 0 {
		return nil
	}
	keys := make([]string, 0, len(r.changed))
	rows := make([]*flowRate, 0, len(r.changed))
	for k := range r.changed {
		keys = append(keys, k)
		rows = append(rows, &flowRate{Type: r.f.Type, RateKey: k, TAT: r.tats[k]})
	}
	if _, err := tx.idb.NewDelete().Model((*flowRate)(nil)).Where("type = ? AND rate_key IN (?)", r.f.Type, bunIn(keys)).Exec(ctx); err != nil {
		return err
	}
	_, err := tx.idb.NewInsert().Model(&rows).Exec(ctx)
	return err
}

// FlowRateNext returns, per rate key of a type, when its next step may start (only keys whose next
// slot is after now).
func (s *Store) FlowRateNext(ctx context.Context, typ string, limit int, period time.Duration, now time.Time) (map[string]time.Time, error) {
	var rows []*flowRate
	if err := s.idb.NewSelect().Model(&rows).Where("type = ?", typ).Scan(ctx); err != nil {
		return nil, err
	}
	r := flowRates{f: FlowSpec{RateLimit: limit, RatePeriod: period}}
	out := map[string]time.Time{}
	for _, row := range rows {
		if at := UTC(row.TAT).Add(-r.tolerance()); at.After(now) {
			out[row.RateKey] = at
		}
	}
	return out, nil
}
