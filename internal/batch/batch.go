// Package batch coalesces concurrent calls into batches: the one primitive behind cairn's group
// commits (side effects, remote task reads, remote task results).
package batch

import (
	"context"
	"sync"
)

// Group coalesces concurrent calls into batches: the first caller to find room for a leader
// becomes one and runs batches of whatever callers have queued until the queue is empty. Up to
// Leaders leaders run at once, so up to Leaders batches are in flight. No goroutine outlives its
// caller. A Group must not be copied after first use.
type Group[Q, R any] struct {
	// Leaders bounds the batches in flight at once (0: one).
	Leaders int
	// MaxBatch bounds the calls one batch carries (0: no bound).
	MaxBatch int
	// Run runs one batch and returns a result per call, in the calls' order: either err, which
	// fails every call of the batch, or an error per call in errs (nil: none failed).
	Run func(ctx context.Context, qs []Q) (rs []R, errs []error, err error)
	// Abandon lets a caller stop waiting when its context ends; its call may still run in the
	// batch that holds it. Without it a caller waits for its call's batch.
	Abandon bool

	mu      sync.Mutex
	queue   []*call[Q, R]
	leaders int
}

type call[Q, R any] struct {
	q    Q
	r    R
	err  error
	done chan struct{}
}

// Whole adapts a batch function whose error fails the whole batch to Group.Run.
func Whole[Q, R any](run func(ctx context.Context, qs []Q) ([]R, error)) func(ctx context.Context, qs []Q) ([]R, []error, error) {
	return func(ctx context.Context, qs []Q) ([]R, []error, error) {
		rs, err := run(ctx, qs)
		return rs, nil, err
	}
}

// Do queues q, leads batches if there is room for a leader, and returns q's result.
func (g *Group[Q, R]) Do(ctx context.Context, q Q) (R, error) {
	c := &call[Q, R]{q: q, done: make(chan struct{})}
	g.enqueue(ctx, c)
	if err := g.wait(ctx, c); err != nil {
		var zero R
		return zero, err
	}
	return c.r, c.err
}

// DoMany queues qs together (they go in one batch unless the queue is longer than MaxBatch) and
// returns, per call, its result or its error.
func (g *Group[Q, R]) DoMany(ctx context.Context, qs []Q) ([]R, []error) {
	calls := make([]*call[Q, R], len(qs))
	for i, q := range qs {
		calls[i] = &call[Q, R]{q: q, done: make(chan struct{})}
	}
	g.enqueue(ctx, calls...)
	rs, errs := make([]R, len(qs)), make([]error, len(qs))
	for i, c := range calls {
		if err := g.wait(ctx, c); err != nil {
			errs[i] = err
			continue
		}
		rs[i], errs[i] = c.r, c.err
	}
	return rs, errs
}

// enqueue queues calls and, if there is room for a leader, leads until the queue is empty.
func (g *Group[Q, R]) enqueue(ctx context.Context, calls ...*call[Q, R]) {
	g.mu.Lock()
	g.queue = append(g.queue, calls...)
	lead := g.leaders < max(1, g.Leaders)
	if lead {
		g.leaders++
	}
	g.mu.Unlock()
	if lead {
		g.lead(ctx)
	}
}

// wait waits for c's batch, or with Abandon for ctx to end (then it returns ctx's error).
func (g *Group[Q, R]) wait(ctx context.Context, c *call[Q, R]) error {
	if !g.Abandon {
		<-c.done
		return nil
	}
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *Group[Q, R]) lead(ctx context.Context) {
	// The batch carries other callers' work: it must not stop when this caller's context does.
	ctx = context.WithoutCancel(ctx)
	for {
		g.mu.Lock()
		if len(g.queue) == 0 {
			g.leaders--
			g.mu.Unlock()
			return
		}
		n := len(g.queue)
		if g.MaxBatch > 0 {
			n = min(n, g.MaxBatch)
		}
		batch := g.queue[:n:n]
		g.queue = g.queue[n:]
		g.mu.Unlock()

		qs := make([]Q, len(batch))
		for i, c := range batch {
			qs[i] = c.q
		}
		rs, errs, err := g.Run(ctx, qs)
		for i, c := range batch {
			switch {
			case err != nil:
				c.err = err
			case errs != nil && errs[i] != nil:
				c.err = errs[i]
			default:
				c.r = rs[i]
			}
			close(c.done)
		}
	}
}
