package engine

import (
	"context"
	"sync"

	"github.com/cairnflow/cairn/internal/batch"
	"github.com/cairnflow/cairn/persistence"
)

// endBatch writes the results of remote tasks that arrive together in one transaction: each
// task's fenced update, one wake-up of their workflows, their change events, one commit. The first
// caller to find no batch running leads: it writes what is queued, then what queued meanwhile,
// until the queue is empty. Workers complete tasks one request at a time; without this each would
// cost a transaction (and on SQLite, a turn on its only connection).
type endBatch struct {
	once  sync.Once
	group *batch.Group[persistence.RemoteTaskEndParams, *persistence.RemoteTask]
}

// maxEndBatch bounds the results one transaction writes.
const maxEndBatch = 500

// of returns the engine's batch group, made on first use.
func (b *endBatch) of(e *Engine) *batch.Group[persistence.RemoteTaskEndParams, *persistence.RemoteTask] {
	b.once.Do(func() {
		// One batch at a time; a caller whose context ends stops waiting (the result may still be
		// written by the batch that holds it, and the caller may not know).
		b.group = &batch.Group[persistence.RemoteTaskEndParams, *persistence.RemoteTask]{
			Leaders: 1, MaxBatch: maxEndBatch, Abandon: true, Run: e.writeEnds}
	})
	return b.group
}

// do queues a result and returns the task as written, or the error for this result (ErrConflict
// when its token no longer holds the task).
func (b *endBatch) do(ctx context.Context, e *Engine, p persistence.RemoteTaskEndParams) (*persistence.RemoteTask, error) {
	return b.of(e).Do(ctx, p)
}

// doMany queues many results together (they go in one transaction unless the queue is longer
// than a batch) and returns, per result, the task as written or its error.
func (b *endBatch) doMany(ctx context.Context, e *Engine, ps []persistence.RemoteTaskEndParams) ([]*persistence.RemoteTask, []error) {
	return b.of(e).DoMany(ctx, ps)
}

// writeEnds writes a batch of results in one transaction and returns, per result, the task as
// written or its error: a result whose token no longer holds its task gets ErrConflict and writes
// nothing, without failing the others.
func (e *Engine) writeEnds(ctx context.Context, results []persistence.RemoteTaskEndParams) ([]*persistence.RemoteTask, []error, error) {
	tasks, errs := make([]*persistence.RemoteTask, len(results)), make([]error, len(results))
	var ended []*persistence.RemoteTask
	var woken []int64
	var claimed []*persistence.Workflow
	// Slots of this node's pools for the workflows the results wake, reserved anew by each try
	// of the transaction.
	var reserved []*WakeClaim
	err := e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		doneWake(reserved, nil)
		reserved = nil
		// A result lost in a database crash leaves its task leased: the lease runs out and the
		// task runs again, as at-least-once delivery allows.
		if err := tx.AsyncCommit(ctx); err != nil {
			return err
		}
		now := persistence.Now()
		// One statement for the batch; a task named twice (two results racing) takes its later
		// results one at a time, after the first is written.
		var first, again []int
		seen := make(map[int64]bool, len(results))
		for i, p := range results {
			if seen[p.ID] {
				again = append(again, i)
			} else {
				seen[p.ID] = true
				first = append(first, i)
			}
		}
		ps := make([]persistence.RemoteTaskEndParams, len(first))
		for j, i := range first {
			ps[j] = results[i]
		}
		rows, err := tx.RemoteTaskEndMany(ctx, ps, now)
		if err != nil {
			return err
		}
		for j, i := range first {
			tasks[i], errs[i] = rows[j], nil
			if rows[j] == nil {
				errs[i] = persistence.ErrConflict
			}
		}
		for _, i := range again {
			rows, err := tx.RemoteTaskEndMany(ctx, []persistence.RemoteTaskEndParams{results[i]}, now)
			if err != nil {
				return err
			}
			tasks[i], errs[i] = rows[0], nil
			if rows[0] == nil {
				errs[i] = persistence.ErrConflict
			}
		}
		ended = ended[:0]
		for i := range results {
			if errs[i] == nil {
				ended = append(ended, tasks[i])
			}
		}
		reserved = e.reserveWake(ended)
		woken, claimed, err = e.wakeForTasks(ctx, tx, ended, now, claimsOf(reserved))
		return err
	})
	if err != nil {
		doneWake(reserved, nil)
		return nil, nil, err
	}
	doneWake(reserved, claimed)
	if len(woken) > 0 {
		// The pools of the groups of the workflows woken but not claimed claim them.
		taken := make(map[int64]bool, len(claimed))
		for _, w := range claimed {
			taken[w.ID] = true
		}
		groups := map[string]bool{}
		for _, t := range ended {
			if !taken[t.WorkflowID] {
				groups[t.ExecutorGroup] = true
			}
		}
		e.afterCommit(groups, true)
	}
	e.traceTasks(ctx, tasks)
	return tasks, errs, nil
}
