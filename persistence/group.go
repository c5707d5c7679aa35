package persistence

import (
	"context"
	"sync"
)

// groupCommit coalesces concurrent calls into batches: the first caller to find no leader running
// becomes one and runs batches of whatever callers have queued until the queue is empty. Up to max
// leaders run at once, so up to max batches are in flight. No goroutine outlives its caller.
type groupCommit[Q, R any] struct {
	max      int
	maxBatch int
	run      func(ctx context.Context, qs []Q) ([]R, error)

	mu      sync.Mutex
	queue   []*groupCall[Q, R]
	leaders int
}

type groupCall[Q, R any] struct {
	q    Q
	r    R
	err  error
	done chan struct{}
}

// do queues q, leads batches if there is room for a leader, and returns q's result.
func (g *groupCommit[Q, R]) do(ctx context.Context, q Q) (R, error) {
	c := &groupCall[Q, R]{q: q, done: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, c)
	lead := g.leaders < g.max
	if lead {
		g.leaders++
	}
	g.mu.Unlock()
	if lead {
		g.lead(ctx)
	}
	<-c.done
	return c.r, c.err
}

func (g *groupCommit[Q, R]) lead(ctx context.Context) {
	// The batch carries other callers' work: it must not stop when this caller's context does.
	ctx = context.WithoutCancel(ctx)
	for {
		g.mu.Lock()
		if len(g.queue) == 0 {
			g.leaders--
			g.mu.Unlock()
			return
		}
		n := min(len(g.queue), g.maxBatch)
		batch := g.queue[:n:n]
		g.queue = g.queue[n:]
		g.mu.Unlock()

		qs := make([]Q, len(batch))
		for i, c := range batch {
			qs[i] = c.q
		}
		rs, err := g.run(ctx, qs)
		for i, c := range batch {
			if err != nil {
				c.err = err
			} else {
				c.r = rs[i]
			}
			close(c.done)
		}
	}
}
