// Waking workflows, and claiming some of them in the same update: a pool with free slots takes
// the workflows a remote result wakes in the result's transaction, so that their next step needs
// neither a wake-up nor a claim of its own.

package persistence

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// WorkflowWakeAndClaim is WorkflowWake that also claims, for each of claims (a pool's claim: its
// executor, group, types and free slots as Limit), up to Limit of the woken workflows of its
// group and types that no attempt holds, in the update that wakes them: they become EXECUTING by
// the claim's executor as a claim would leave them (version, step deadline, started), due now.
// It returns the IDs it woke (the claimed among them) and the claimed workflows, whole. A claim
// whose executor is stopped claims nothing; its workflows are woken as the others.
func (s *Store) WorkflowWakeAndClaim(ctx context.Context, p WorkflowWakeParams, claims []WorkflowClaimParams) ([]int64, []*Workflow, error) {
	if len(p.IDs) == 0 {
		return nil, nil, nil
	}
	var rows []*Workflow
	q := s.idb.NewSelect().Model(&rows)
	if len(claims) == 0 {
		q = q.Column("id", "status", "wait_signal") // nothing is claimed: the rows need not be read whole
	}
	q = s.forUpdate(q.Where("id IN (?)", bunIn(p.IDs)).OrderExpr("id"), false)
	if err := q.Scan(ctx); err != nil {
		return nil, nil, fmt.Errorf("error locking workflows to wake: %w", err)
	}
	var waking []*Workflow // in ID order
	for _, r := range rows {
		if r.Status == StatusWaiting && (p.Signal == "" || r.WaitSignal == nil || *r.WaitSignal == p.Signal || *r.WaitSignal == WaitSignalAmong) {
			waking = append(waking, r)
		}
	}
	if len(waking) == 0 {
		return nil, nil, nil
	}
	now := UTC(p.Now)
	var claimed []*Workflow
	taken := map[int64]bool{}
	for _, c := range claims {
		var mine []*Workflow
		for _, w := range waking {
			if len(mine) < c.Limit && !taken[w.ID] && w.ExecutorID == nil && w.ExecutorGroup == c.Group && slices.Contains(c.Types, w.Type) {
				mine = append(mine, w)
			}
		}
		got, err := s.claimWoken(ctx, c, mine, now)
		if err != nil {
			return nil, nil, err
		}
		for _, w := range got {
			taken[w.ID] = true
		}
		claimed = append(claimed, got...)
	}
	woken := make([]int64, len(waking))
	var rest []int64
	for i, w := range waking {
		woken[i] = w.ID
		if !taken[w.ID] {
			rest = append(rest, w.ID)
		}
	}
	if len(rest) > 0 {
		if _, err := s.idb.NewUpdate().Model((*Workflow)(nil)).
			Set("status = ?", StatusInProgress).Set("next_activation = ?", now).Set("modified = ?", now).
			Set("version = version + 1").Where("id IN (?)", bunIn(rest)).Exec(ctx); err != nil {
			return nil, nil, fmt.Errorf("error waking workflows: %w", err)
		}
	}
	return woken, claimed, nil
}

// claimWoken claims locked WAITING workflows for c in the update that wakes them, unless c's
// executor is stopped (then it claims none), and returns them as the update left them.
func (s *Store) claimWoken(ctx context.Context, c WorkflowClaimParams, ws []*Workflow, now time.Time) ([]*Workflow, error) {
	if len(ws) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(ws))
	for i, w := range ws {
		ids[i] = w.ID
	}
	c.Now = now
	st := s.newClaimStatement(c)
	res, err := s.idb.NewUpdate().Model((*Workflow)(nil)).Set(st.Set, st.SetArgs...).Set("next_activation = ?", now).
		Where("id IN (?)", bunIn(ids)).
		Where("EXISTS (SELECT 1 FROM executors AS e WHERE e.id = ? AND e.stopped IS NULL)", c.ExecutorID).Exec(ctx)
	if err != nil {
		return nil, fmt.Errorf("error claiming woken workflows: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return nil, err // the executor stopped: the caller wakes them as the others
	}
	for _, w := range ws {
		st.Claimed(w)
		w.NextActivation = &now
	}
	return ws, nil
}
