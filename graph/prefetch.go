package graph

import (
	"context"
	"sync"

	"github.com/graph-gophers/dataloader/v7"
)

// prefetch is the batch function behind one per-request dataloader, made page-aware: when a batch
// asks for some keys, it also fetches the keys of every sibling the request listed (the rest of a
// page of workflows), and keeps each result as a future. A later batch finds those results (or
// waits for them while they are in flight) instead of querying again, so the number of statements
// for a page does not depend on how gqlgen's goroutines happened to fall into batches.
type prefetch[K comparable, V any] struct {
	// expand returns keys worth fetching together with the asked ones (may be nil).
	expand func(keys []K) []K
	// fetch loads keys in one statement; keys it leaves out of the map have the zero value.
	fetch func(ctx context.Context, keys []K) (map[K]V, error)

	mu      sync.Mutex
	futures map[K]*future[V]
}

type future[V any] struct {
	done chan struct{}
	v    V
	err  error
}

func newPrefetch[K comparable, V any](expand func([]K) []K, fetch func(context.Context, []K) (map[K]V, error)) *prefetch[K, V] {
	return &prefetch[K, V]{expand: expand, fetch: fetch, futures: map[K]*future[V]{}}
}

// loader returns a dataloader over the prefetch (results cached for the request).
func (p *prefetch[K, V]) loader() *dataloader.Loader[K, V] {
	return dataloader.NewBatchedLoader(p.batch, dataloader.WithWait[K, V](dataloaderWait))
}

func (p *prefetch[K, V]) batch(ctx context.Context, keys []K) []*dataloader.Result[V] {
	p.mu.Lock()
	var todo []K
	var mine []*future[V]
	claim := func(k K) {
		if _, ok := p.futures[k]; ok {
			return
		}
		f := &future[V]{done: make(chan struct{})}
		p.futures[k] = f
		todo = append(todo, k)
		mine = append(mine, f)
	}
	for _, k := range keys {
		claim(k)
	}
	if len(todo) > 0 && p.expand != nil {
		for _, k := range p.expand(todo) {
			claim(k)
		}
	}
	waits := make([]*future[V], len(keys))
	for i, k := range keys {
		waits[i] = p.futures[k]
	}
	p.mu.Unlock()

	if len(todo) > 0 {
		got, err := p.fetch(ctx, todo)
		for i, k := range todo {
			mine[i].v, mine[i].err = got[k], err
			close(mine[i].done)
		}
		if err != nil {
			// A failed fetch is not remembered: a later request in this response may try again.
			p.mu.Lock()
			for _, k := range todo {
				delete(p.futures, k)
			}
			p.mu.Unlock()
		}
	}
	out := make([]*dataloader.Result[V], len(keys))
	for i, f := range waits {
		select {
		case <-f.done:
			out[i] = &dataloader.Result[V]{Data: f.v, Error: f.err}
		case <-ctx.Done():
			out[i] = &dataloader.Result[V]{Error: ctx.Err()}
		}
	}
	return out
}
