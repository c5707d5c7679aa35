// Claims made by wake-ups: a node's pool may take, in the transaction of a remote result, the
// workflows the result wakes, so that their next step starts as soon as the result commits,
// without a wake-up hint and a claim of their own (one update of each workflow instead of two).

package engine

import (
	"sync"

	"github.com/cairnflow/cairn/persistence"
)

// WakeClaimer is a pool that can take woken workflows (internal/pool's Worker).
type WakeClaimer interface {
	// ReserveWake reserves up to n of the pool's free slots for a transaction about to wake
	// workflows, and returns the claim to make with them, or nil when it takes none (it is full
	// or stopping, or knows no type it may claim this way).
	ReserveWake(n int) *WakeClaim
}

// WakeClaim is a reservation of a pool's slots for the workflows a transaction wakes.
type WakeClaim struct {
	// Params is the claim: the pool's executor, group, types (those it claims with its plain
	// claim, without flow control), step deadlines, and as Limit the slots reserved.
	Params persistence.WorkflowClaimParams
	// Done is called once the transaction ended: with the workflows it claimed when it committed,
	// with none when it rolled back. The pool runs them and frees the slots they did not take.
	Done func(claimed []*persistence.Workflow)
}

// wakeClaimers are the pools of this node that take woken workflows, by executor group.
type wakeClaimers struct {
	mu     sync.Mutex
	byPool map[string]WakeClaimer
}

// SetWakeClaimer makes a pool of group take the workflows this node's remote results wake (nil:
// no pool of the group does).
func (e *Engine) SetWakeClaimer(group string, c WakeClaimer) {
	e.wakes.mu.Lock()
	defer e.wakes.mu.Unlock()
	if c == nil {
		delete(e.wakes.byPool, group)
		return
	}
	if e.wakes.byPool == nil {
		e.wakes.byPool = map[string]WakeClaimer{}
	}
	e.wakes.byPool[group] = c
}

// reserveWake reserves, for the workflows of tasks that a transaction is about to wake, slots of
// this node's pools of their groups.
func (e *Engine) reserveWake(tasks []*persistence.RemoteTask) []*WakeClaim {
	want := map[WakeClaimer]int{}
	e.wakes.mu.Lock()
	for _, t := range tasks {
		if c := e.wakes.byPool[t.ExecutorGroup]; c != nil {
			want[c]++
		}
	}
	e.wakes.mu.Unlock()
	var out []*WakeClaim
	for c, n := range want {
		if r := c.ReserveWake(n); r != nil {
			out = append(out, r)
		}
	}
	return out
}

// doneWake ends reservations: each gets the claimed workflows of its executor (none after a
// rollback: claimed is nil).
func doneWake(rs []*WakeClaim, claimed []*persistence.Workflow) {
	for _, r := range rs {
		var mine []*persistence.Workflow
		for _, w := range claimed {
			if w.ExecutorID != nil && *w.ExecutorID == r.Params.ExecutorID {
				mine = append(mine, w)
			}
		}
		r.Done(mine)
	}
}

// claimsOf returns the claims of reservations.
func claimsOf(rs []*WakeClaim) []persistence.WorkflowClaimParams {
	out := make([]persistence.WorkflowClaimParams, len(rs))
	for i, r := range rs {
		out[i] = r.Params
	}
	return out
}
