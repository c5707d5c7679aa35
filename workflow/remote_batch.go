package workflow

import (
	"context"
	"sync"

	"github.com/cairnflow/cairn/persistence"
)

// endBatch writes the results of remote tasks that arrive together in one transaction: each
// task's fenced update, one wake-up of their workflows, their change events, one commit. The first
// caller to find no batch running leads: it writes what is queued, then what queued meanwhile,
// until the queue is empty. Workers complete tasks one request at a time; without this each would
// cost a transaction (and on SQLite, a turn on its only connection).
type endBatch struct {
	mu      sync.Mutex
	queue   []*endCall
	leading bool
}

type endCall struct {
	p    persistence.RemoteTaskEndParams
	task *persistence.RemoteTask
	err  error
	done chan struct{}
}

// maxEndBatch bounds the results one transaction writes.
const maxEndBatch = 500

// do queues a result and returns the task as written, or the error for this result (ErrConflict
// when its token no longer holds the task).
func (b *endBatch) do(ctx context.Context, e *Engine, p persistence.RemoteTaskEndParams) (*persistence.RemoteTask, error) {
	c := &endCall{p: p, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	lead := !b.leading
	b.leading = true
	b.mu.Unlock()
	if lead {
		b.lead(ctx, e)
	}
	select {
	case <-c.done:
		return c.task, c.err
	case <-ctx.Done():
		// The result may still be written by the batch that holds it; the caller may not know.
		return nil, ctx.Err()
	}
}

// doMany queues many results together (they go in one transaction unless the queue is longer
// than a batch) and returns, per result, the task as written or its error.
func (b *endBatch) doMany(ctx context.Context, e *Engine, ps []persistence.RemoteTaskEndParams) ([]*persistence.RemoteTask, []error) {
	calls := make([]*endCall, len(ps))
	for i, p := range ps {
		calls[i] = &endCall{p: p, done: make(chan struct{})}
	}
	b.mu.Lock()
	b.queue = append(b.queue, calls...)
	lead := !b.leading
	b.leading = true
	b.mu.Unlock()
	if lead {
		b.lead(ctx, e)
	}
	tasks, errs := make([]*persistence.RemoteTask, len(ps)), make([]error, len(ps))
	for i, c := range calls {
		select {
		case <-c.done:
			tasks[i], errs[i] = c.task, c.err
		case <-ctx.Done():
			// The results may still be written by the batch that holds them.
			errs[i] = ctx.Err()
		}
	}
	return tasks, errs
}

func (b *endBatch) lead(ctx context.Context, e *Engine) {
	// The batch carries other callers' results: it must not stop when this caller's context does.
	ctx = context.WithoutCancel(ctx)
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.leading = false
			b.mu.Unlock()
			return
		}
		n := min(len(b.queue), maxEndBatch)
		batch := b.queue[:n:n]
		b.queue = b.queue[n:]
		b.mu.Unlock()
		e.writeEnds(ctx, batch)
		for _, c := range batch {
			close(c.done)
		}
	}
}

// writeEnds writes a batch of results in one transaction; a result whose token no longer holds
// its task gets ErrConflict and writes nothing, without failing the others.
func (e *Engine) writeEnds(ctx context.Context, batch []*endCall) {
	groups := map[string]bool{}
	var woken []int64
	err := e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		// A result lost in a database crash leaves its task leased: the lease runs out and the
		// task runs again, as at-least-once delivery allows.
		if err := tx.AsyncCommit(ctx); err != nil {
			return err
		}
		now := persistence.Now()
		clear(groups)
		// One statement for the batch; a task named twice (two results racing) takes its later
		// results one at a time, after the first is written.
		var first, again []*endCall
		seen := make(map[int64]bool, len(batch))
		for _, c := range batch {
			if seen[c.p.ID] {
				again = append(again, c)
			} else {
				seen[c.p.ID] = true
				first = append(first, c)
			}
		}
		ps := make([]persistence.RemoteTaskEndParams, len(first))
		for i, c := range first {
			ps[i] = c.p
		}
		rows, err := tx.RemoteTaskEndMany(ctx, ps, now)
		if err != nil {
			return err
		}
		for i, c := range first {
			c.task, c.err = rows[i], nil
			if rows[i] == nil {
				c.err = persistence.ErrConflict
			}
		}
		for _, c := range again {
			rows, err := tx.RemoteTaskEndMany(ctx, []persistence.RemoteTaskEndParams{c.p}, now)
			if err != nil {
				return err
			}
			c.task, c.err = rows[0], nil
			if rows[0] == nil {
				c.err = persistence.ErrConflict
			}
		}
		var ended []*persistence.RemoteTask
		for _, c := range batch {
			if c.err == nil {
				ended = append(ended, c.task)
				groups[c.task.ExecutorGroup] = true
			}
		}
		woken, err = e.wakeForTasks(ctx, tx, ended, now)
		return err
	})
	if err != nil {
		for _, c := range batch {
			c.task, c.err = nil, err
		}
		return
	}
	if len(woken) > 0 {
		e.afterCommit(groups, true)
	}
}
