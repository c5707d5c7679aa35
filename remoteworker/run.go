package remoteworker

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"
)

// Handler serves one function: it gets a leased task and returns the task's output, or an error
// (a *Failure says how; any other error fails the task as retryable). Its context ends when the
// lease is lost or Run stops.
type Handler func(ctx context.Context, t Task) (any, error)

// RunOptions configures Run.
type RunOptions struct {
	// Functions are the handlers, by function name.
	Functions map[string]Handler
	// Worker is the worker's name (in cairn's list of workers and its task instances).
	Worker string
	// Concurrency is how many tasks run at once (default 4); each poll asks for the free slots.
	Concurrency int
	// LeaseMs is each lease's length (default 30000); heartbeats renew it every third of it.
	LeaseMs int
	// WaitMs is how long a poll waits for a task (default 20000).
	WaitMs int
	// Logger receives errors (slog.Default when nil).
	Logger *slog.Logger
}

// Run polls for the functions' tasks and runs them with their handlers, heartbeating each until
// it ends, then completes or fails it, until ctx ends; it then lets running handlers finish (their
// contexts are cancelled) and returns ctx's error. A failed poll is retried after a second.
func (c *Client) Run(ctx context.Context, opts RunOptions) error {
	if len(opts.Functions) == 0 {
		return errors.New("remoteworker: Run needs at least one function")
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	if opts.LeaseMs <= 0 {
		opts.LeaseMs = 30000
	}
	if opts.WaitMs <= 0 {
		opts.WaitMs = 20000
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	functions := slices.Sorted(maps.Keys(opts.Functions))
	slots := make(chan struct{}, opts.Concurrency)
	// Outputs go to one completer, which sends those that are ready together in one request.
	outputs := make(chan completion, opts.Concurrency)
	completerDone := make(chan struct{})
	go func() { defer close(completerDone); c.completeLoop(context.WithoutCancel(ctx), outputs, log) }()
	defer func() { <-completerDone }()
	defer close(outputs)
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		// Wait for one free slot, then take every free one for this poll.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		free := 1
		for free < opts.Concurrency {
			select {
			case slots <- struct{}{}:
				free++
				continue
			default:
			}
			break
		}
		tasks, err := c.Poll(ctx, PollParams{Functions: functions, Max: free, WaitMs: opts.WaitMs, LeaseMs: opts.LeaseMs, Worker: opts.Worker})
		for i := len(tasks); i < free; i++ {
			<-slots
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			log.Warn("remoteworker: poll failed; retrying in a second", "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		for _, t := range tasks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				c.runTask(ctx, opts, t, outputs, log)
			}()
		}
	}
	return ctx.Err()
}

// completion is a task's output waiting for the completer; done receives the result's error.
type completion struct {
	token  string
	output any
	done   chan error
}

// maxCompleteBatch is the most outputs one completeTasks request carries.
const maxCompleteBatch = 500

// completeLoop sends the outputs that are ready together in one completeTasks request, until
// outputs is closed: whatever arrives while a request is on its way goes in the next one. When a
// whole request fails (not a conflict of one result), its outputs are sent again one by one, so
// that one bad output cannot hold back the others.
func (c *Client) completeLoop(ctx context.Context, outputs <-chan completion, log *slog.Logger) {
	for first := range outputs {
		batch := []completion{first}
	gather:
		for len(batch) < maxCompleteBatch {
			select {
			case o, ok := <-outputs:
				if !ok {
					break gather
				}
				batch = append(batch, o)
			default:
				break gather
			}
		}
		results := make([]Result, len(batch))
		for i, o := range batch {
			results[i] = Result{Token: o.token, Output: o.output}
		}
		errs, err := c.CompleteMany(ctx, results)
		if err != nil && len(batch) > 1 {
			for _, o := range batch {
				o.done <- c.Complete(ctx, o.token, o.output)
			}
			continue
		}
		for i, o := range batch {
			if err != nil {
				o.done <- err
			} else {
				o.done <- errs[i]
			}
		}
	}
}

// runTask runs one task's handler while heartbeating its lease, then ends the task (an output
// through the completer, with the outputs of other tasks that ended meanwhile).
func (c *Client) runTask(ctx context.Context, opts RunOptions, t Task, outputs chan<- completion, log *slog.Logger) {
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	beat := time.Duration(opts.LeaseMs) * time.Millisecond / 3
	go func() {
		tick := time.NewTicker(beat)
		defer tick.Stop()
		for {
			select {
			case <-hctx.Done():
				return
			case <-tick.C:
			}
			if _, err := c.Heartbeat(hctx, t.Token); err != nil {
				if IsConflict(err) {
					cancel() // the lease is lost: another worker may run the task now
					return
				}
				if hctx.Err() == nil {
					log.Warn("remoteworker: heartbeat failed", "task", t.ID, "error", err)
				}
			}
		}
	}()
	out, err := opts.Functions[t.Function](hctx, t)
	if hctx.Err() != nil && ctx.Err() == nil {
		return // the lease was lost: nothing to write
	}
	// The task's result is written even while Run stops: the work is done.
	wctx := context.WithoutCancel(ctx)
	if err == nil {
		done := make(chan error, 1)
		outputs <- completion{token: t.Token, output: out, done: done}
		err = <-done
	} else {
		var f *Failure
		if !errors.As(err, &f) {
			f = &Failure{Title: "Handler Failed", Detail: err.Error(), Retryable: true}
		}
		err = c.Fail(wctx, t.Token, *f)
	}
	if err != nil && !IsConflict(err) {
		log.Warn("remoteworker: ending a task failed", "task", t.ID, "error", err)
	}
}
