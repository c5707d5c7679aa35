// Package maintenance holds a node's background services: everything that keeps a node and the
// cluster healthy besides running steps. Each service has a config checked once by its constructor,
// and Start/Stop; package cairn's Node.Run starts each of them once per node.
//
// Services that touch shared rows (recovery, schedule firing, retention, event trimming, lease
// sweeping) run on every node at once: none of them needs a leader, because each statement they
// run is safe beside the same statement on another node (row locks, SKIP LOCKED where the database
// has it, and conditional updates). Each says how in its doc comment.
package maintenance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Service is one background task of a node.
type Service interface {
	// Start begins the service's work in its own goroutine, until Stop or until ctx ends. A service
	// starts once: a second Start returns an error.
	Start(ctx context.Context) error
	// Stop ends the work and waits for it to return. Stop before Start does nothing.
	Stop()
}

// ErrStarted is returned by a second Start of a service.
var ErrStarted = errors.New("service already started")

// runner runs a service's one goroutine and stops it.
type runner struct {
	name string

	mu      sync.Mutex
	started bool
	cancel  context.CancelFunc
	done    chan struct{}
}

func (r *runner) start(ctx context.Context, run func(ctx context.Context)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return fmt.Errorf("error starting %s: %w", r.name, ErrStarted)
	}
	r.started = true
	ctx, r.cancel = context.WithCancel(ctx)
	r.done = make(chan struct{})
	go func() {
		defer close(r.done)
		run(ctx)
	}()
	return nil
}

func (r *runner) stop() {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// every calls fn every interval until ctx ends; the first call is one interval after the start.
func every(ctx context.Context, interval time.Duration, fn func(ctx context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fn(ctx)
	}
}

func positive(name string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%s must be positive, not %s", name, d)
	}
	return nil
}
