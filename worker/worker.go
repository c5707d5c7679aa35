// Package worker is cairn's worker pool: it registers the node as an executor, heartbeats from its
// own goroutine, claims due workflows in batches, runs their steps through the engine, completes
// them in batches (one transaction per batch), recovers the work of dead executors, and drains
// gracefully on shutdown.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// Options configures a Worker. Zero values take the defaults named on each field.
type Options struct {
	// Group is the executor group whose workflows this pool runs ("default").
	Group string
	// Concurrency is how many steps run at once (100).
	Concurrency int
	// ClaimBatch caps how many workflows one claim takes (a quarter of Concurrency, so that claims
	// overlap the completions of earlier batches).
	ClaimBatch int
	// CompleteBatch caps how many outcomes one completion transaction writes (a quarter of
	// Concurrency, at least 100, at most 2000).
	CompleteBatch int
	// Completers is how many completion transactions may run at once (2 on PostgreSQL, whose
	// backends work in parallel; always 1 on SQLite, which has one writer).
	Completers int
	// CompleteDelay is how long a completer may wait for more finished steps to fill a batch while
	// other steps are still running (1ms). Larger batches mean fewer, cheaper transactions.
	CompleteDelay time.Duration
	// PollInterval is the fallback poll when no wake-up arrives (1s).
	PollInterval time.Duration
	// HeartbeatInterval is how often the executor heartbeats and looks for dead executors (2s).
	HeartbeatInterval time.Duration
	// Expiry is how long after its last heartbeat an executor counts as dead (10s).
	Expiry time.Duration
	// DrainTimeout is how long shutdown waits for running steps before releasing them (30s).
	DrainTimeout time.Duration
	// Retention, when positive, deletes workflow trees that ended longer ago than this, with their
	// history, checked about every 30s (more often for a retention under 5 minutes; 0 keeps everything).
	Retention time.Duration
	// EventRetention, when positive, deletes change events (what subscriptions replay from a
	// cursor) older than this, oldest first, checked like Retention; 0 keeps them all.
	EventRetention time.Duration
	// Host names this node on its executor row (os.Hostname()).
	Host string
	// Logger receives the pool's logs (the engine's logger).
	Logger *slog.Logger
}

func (o Options) withDefaults(e *workflow.Engine) Options {
	if o.Group == "" {
		o.Group = workflow.DefaultGroup
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 100
	}
	if o.ClaimBatch <= 0 {
		o.ClaimBatch = max(1, o.Concurrency/4)
	}
	o.ClaimBatch = min(o.ClaimBatch, o.Concurrency)
	if o.CompleteBatch <= 0 {
		o.CompleteBatch = min(2000, max(100, o.Concurrency/4))
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.Completers <= 0 {
		o.Completers = 2
	}
	if o.CompleteDelay <= 0 {
		o.CompleteDelay = time.Millisecond
	}
	if e.Store().Kind() == persistence.KindSQLite {
		o.Completers = 1
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = 2 * time.Second
	}
	if o.Expiry <= 0 {
		o.Expiry = 10 * time.Second
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 30 * time.Second
	}
	if o.Host == "" {
		o.Host, _ = os.Hostname()
	}
	if o.Logger == nil {
		o.Logger = e.Logger()
	}
	return o
}

// Worker is one node's pool for one executor group.
type Worker struct {
	engine *workflow.Engine
	store  *persistence.Store
	opts   Options
	log    *slog.Logger

	executorID atomic.Int64
	slots      chan struct{}
	results    chan *workflow.Outcome // buffered for every slot: a finished step never blocks
	drained    chan struct{}          // closed when claiming stopped and the drain ended
	wake       chan struct{}

	heldMu sync.Mutex
	// held lists, by workflow, the claimed versions of the attempts this pool runs and has not
	// completed yet. An attempt, not a workflow ID, is the unit: a late attempt of this node's
	// former executor (declared dead) may still run beside a new claim of the same workflow.
	held  map[int64][]int
	chain map[int64]int // steps run in a row without a release, by workflow

	stopping atomic.Bool // the drain began: no more steps are kept

	stats Stats
}

// Stats counts what a Worker did since it started.
type Stats struct {
	Claimed atomic.Int64
	// Completed counts the steps written; Ended those of them that ended their workflow.
	Completed atomic.Int64
	Ended     atomic.Int64
	Fenced    atomic.Int64
	Recovered atomic.Int64
}

// New returns a Worker over an engine. Call Run to start it.
func New(engine *workflow.Engine, opts Options) *Worker {
	opts = opts.withDefaults(engine)
	return &Worker{
		engine: engine, store: engine.Store(), opts: opts, log: opts.Logger.With("group", opts.Group),
		slots:   make(chan struct{}, opts.Concurrency),
		results: make(chan *workflow.Outcome, opts.Concurrency),
		drained: make(chan struct{}),
		wake:    make(chan struct{}, 1),
		held:    map[int64][]int{},
		chain:   map[int64]int{},
	}
}

// ExecutorID is the executor this pool runs as (0 before Run registers it; it changes when the
// executor was declared dead and registers again).
func (w *Worker) ExecutorID() int64 { return w.executorID.Load() }

// InFlight is how many steps the pool runs now (claimed and not yet completed).
func (w *Worker) InFlight() int { return len(w.slots) }

// Stats returns the pool's counters.
func (w *Worker) Stats() *Stats { return &w.stats }

// Run registers the executor and runs the pool until ctx ends, then drains: it stops claiming,
// waits up to DrainTimeout for running steps, completes them, releases what is still held and marks
// the executor stopped. It returns an error only when it cannot register.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.register(ctx); err != nil {
		return err
	}
	w.log.Info("worker started", "executor", w.ExecutorID(), "concurrency", w.opts.Concurrency)

	// Steps and completions outlive ctx during the drain; hard ends them after it.
	hard, cancelHard := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelHard()

	var bg sync.WaitGroup
	bg.Add(3)
	go func() { defer bg.Done(); w.heartbeatLoop(ctx) }()
	go func() { defer bg.Done(); w.maintainLoop(ctx) }()
	go func() { defer bg.Done(); w.listenWake(ctx) }()

	var completers sync.WaitGroup
	for range w.opts.Completers {
		completers.Add(1)
		go func() { defer completers.Done(); w.completeLoop(hard) }()
	}
	completerDone := make(chan struct{})
	go func() { completers.Wait(); close(completerDone) }()

	w.claimLoop(ctx, hard)
	w.stopping.Store(true)

	// Drain: wait, bounded, until every claimed workflow's step is completed (a slot is released
	// only once its outcome is written).
	for deadline := time.Now().Add(w.opts.DrainTimeout); len(w.slots) > 0; {
		if time.Now().After(deadline) {
			w.log.Warn("drain timeout: releasing steps still running", "timeout", w.opts.DrainTimeout, "running", len(w.slots))
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Steps still running past the drain timeout may finish later: they send into the buffer,
	// which is never closed, and their workflows are released below like a dead executor's.
	close(w.drained)
	select {
	case <-completerDone:
	case <-time.After(w.opts.DrainTimeout):
	}
	cancelHard()
	bg.Wait()
	w.release()
	return nil
}

func (w *Worker) register(ctx context.Context) error {
	e, err := w.store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: w.opts.Host, PID: os.Getpid(), Group: w.opts.Group, Expiry: w.opts.Expiry})
	if err != nil {
		return fmt.Errorf("error registering the worker pool: %w", err)
	}
	w.executorID.Store(e.ID)
	return nil
}

// release marks the executor stopped and hands what it still holds to the live nodes (as a dead
// executor's work: due now, with a RECOVERY action).
func (w *Worker) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id := w.ExecutorID()
	if err := w.store.ExecutorStop(ctx, id); err != nil {
		w.log.Error("error stopping executor", "executor", id, "error", err)
		return
	}
	if n, err := w.engine.Recover(ctx, workflow.RecoverParams{ExecutorID: id}); err != nil {
		w.log.Error("error releasing held workflows", "error", err)
	} else if n > 0 {
		w.log.Info("released workflows still held at shutdown", "count", n)
	}
	w.log.Info("worker stopped", "executor", id)
}

// heartbeatLoop keeps the executor alive, on its own ticker and over the store's heartbeat
// connection, and does nothing else: neither a busy pool, nor slow maintenance, nor API reads
// holding the database's connections may delay it until the node looks dead.
func (w *Worker) heartbeatLoop(ctx context.Context) {
	t := time.NewTicker(w.opts.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		beatCtx, cancel := context.WithTimeout(ctx, w.opts.Expiry)
		err := w.store.ExecutorHeartbeat(beatCtx, w.ExecutorID(), w.opts.Expiry)
		cancel()
		if errors.Is(err, persistence.ErrNotFound) {
			// We were declared dead (paused, partitioned): our work was taken over and our late
			// completions are fenced off. Carry on as a new executor.
			old := w.ExecutorID()
			if err := w.register(ctx); err != nil {
				w.log.Error("error registering again after being declared dead", "error", err)
				continue
			}
			n := w.engine.CancelExecutorSteps(old)
			w.log.Warn("executor was declared dead; registered again", "old", old, "new", w.ExecutorID(), "cancelled_steps", n)
		} else if err != nil && ctx.Err() == nil {
			w.log.Warn("heartbeat failed", "error", err)
		}
	}
}

// maintainLoop recovers dead executors' work, releases what this pool holds but does not run,
// fires due schedules and purges ended workflows, every heartbeat interval.
func (w *Worker) maintainLoop(ctx context.Context) {
	t := time.NewTicker(w.opts.HeartbeatInterval)
	defer t.Stop()
	lastPurge, lastTrim := time.Now(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// Purge about every 30s; more often for a short retention.
		if w.opts.Retention > 0 && time.Since(lastPurge) >= min(30*time.Second, w.opts.Retention/10) {
			lastPurge = time.Now()
			w.purge(ctx)
		}
		if w.opts.EventRetention > 0 && time.Since(lastTrim) >= min(30*time.Second, w.opts.EventRetention/10) {
			lastTrim = time.Now()
			w.trimEvents(ctx)
		}
		n, err := w.engine.Recover(ctx, workflow.RecoverParams{ExecutorID: w.ExecutorID()})
		if err != nil && ctx.Err() == nil {
			w.log.Warn("recovery failed", "error", err)
		}
		if m := w.reconcile(ctx); m > 0 {
			n += m
		}
		if _, err := w.engine.FireSchedules(ctx, persistence.Now()); err != nil && ctx.Err() == nil {
			w.log.Warn("firing schedules failed", "error", err)
		}
		if n > 0 {
			w.stats.Recovered.Add(int64(n))
			w.poke()
		}
	}
}

// purge deletes workflow trees that ended before the retention period, a bounded amount per call.
func (w *Worker) purge(ctx context.Context) {
	before := persistence.Now().Add(-w.opts.Retention)
	for range 10 {
		n, err := w.store.WorkflowPurge(ctx, persistence.WorkflowPurgeParams{FinishedBefore: before, Limit: 500})
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("purging ended workflows failed", "error", err)
			}
			return
		}
		if n > 0 {
			w.log.Info("purged ended workflows", "count", n, "ended_before", before)
		}
		if n < 500 {
			return
		}
	}
}

// trimEvents deletes the change events older than the event retention, a bounded amount per call.
func (w *Worker) trimEvents(ctx context.Context) {
	before := persistence.Now().Add(-w.opts.EventRetention)
	for range 20 {
		n, err := w.store.ChangeEventTrim(ctx, persistence.ChangeEventTrimParams{Before: before, Limit: 5000})
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("trimming change events failed", "error", err)
			}
			return
		}
		if n < 5000 {
			return
		}
	}
}

// reconcile releases workflows the database says this executor holds but the pool is not running
// (its completion was lost, say in a database crash), so that they run again.
func (w *Worker) reconcile(ctx context.Context) int {
	ids, err := w.store.WorkflowClaimedBefore(ctx, w.ExecutorID(), persistence.Now().Add(-w.opts.HeartbeatInterval))
	if err != nil || len(ids) == 0 {
		return 0
	}
	w.heldMu.Lock()
	var stale []int64
	for _, id := range ids {
		if len(w.held[id]) == 0 {
			stale = append(stale, id)
		}
	}
	w.heldMu.Unlock()
	if len(stale) == 0 {
		return 0
	}
	n, err := w.engine.Recover(ctx, workflow.RecoverParams{ExecutorID: w.ExecutorID(), Held: stale})
	if err != nil {
		w.log.Warn("error releasing held workflows that are not running", "error", err)
		return 0
	}
	if n > 0 {
		w.log.Warn("released workflows held but not running here", "count", n)
	}
	return n
}

// listenWake turns wake-up hints for this group into a poke of the claim loop.
func (w *Worker) listenWake(ctx context.Context) {
	ch, unsubscribe := w.engine.Notifier().Subscribe(persistence.TopicWake)
	defer unsubscribe()
	for {
		select {
		case <-ctx.Done():
			return
		case g := <-ch:
			if g == "" || g == w.opts.Group {
				w.poke()
			}
		}
	}
}

func (w *Worker) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// claimLoop claims due workflows while slots are free and starts their steps, until ctx ends.
func (w *Worker) claimLoop(ctx, hard context.Context) {
	poll := time.NewTimer(0)
	defer poll.Stop()
	backoff := 100 * time.Millisecond
	for {
		// Wait for a reason to claim: a wake-up, the poll, or a slot freed after a full batch.
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		case <-poll.C:
		}
		for ctx.Err() == nil {
			free := cap(w.slots) - len(w.slots)
			if free == 0 {
				// Full: the completer pokes when slots free up.
				break
			}
			limit := min(free, w.opts.ClaimBatch)
			now := persistence.Now()
			claimed, err := w.store.WorkflowClaim(ctx, persistence.WorkflowClaimParams{ExecutorID: w.ExecutorID(), Group: w.opts.Group,
				Limit: limit, Now: now, StepDeadline: now.Add(workflow.DefaultStepTimeout), StepTimeouts: w.engine.StepTimeouts(w.opts.Group),
				Types: w.engine.Types(w.opts.Group)})
			if err != nil {
				if ctx.Err() == nil {
					w.log.Warn("claim failed", "error", err, "retry_in", backoff)
					select {
					case <-ctx.Done():
					case <-time.After(backoff):
					}
					backoff = min(backoff*2, 5*time.Second)
				}
				continue
			}
			backoff = 100 * time.Millisecond
			w.stats.Claimed.Add(int64(len(claimed)))
			w.heldMu.Lock()
			for _, wf := range claimed {
				w.held[wf.ID] = append(w.held[wf.ID], wf.Version)
			}
			w.heldMu.Unlock()
			for _, wf := range claimed {
				w.slots <- struct{}{}
				go w.execute(hard, wf)
			}
			if len(claimed) < limit {
				break // nothing more is due now
			}
		}
		if !poll.Stop() {
			select {
			case <-poll.C:
			default:
			}
		}
		poll.Reset(w.opts.PollInterval)
	}
}

func (w *Worker) execute(ctx context.Context, wf *persistence.Workflow) {
	o := w.engine.Execute(ctx, workflow.ExecuteParams{Workflow: wf, ExecutorID: *wf.ExecutorID, Host: w.opts.Host})
	w.results <- o
}

// completeLoop writes outcomes in batches: whatever has arrived while the previous batch was being
// written goes into the next transaction, and while other steps are still running it waits up to
// CompleteDelay for more, so that a busy pool writes few large transactions.
func (w *Worker) completeLoop(ctx context.Context) {
	batch := make([]*workflow.Outcome, 0, w.opts.CompleteBatch)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var o *workflow.Outcome
		select {
		case o = <-w.results:
		case <-w.drained:
			// Write what finished during the drain, then stop.
			select {
			case o = <-w.results:
			default:
				return
			}
		}
		batch = append(batch[:0], o)
		// Gather what else has finished; while more steps are running, wait for them until
		// CompleteDelay after the first (one deadline, however the results trickle in).
		var deadline <-chan time.Time
	gather:
		for len(batch) < w.opts.CompleteBatch {
			select {
			case o := <-w.results:
				batch = append(batch, o)
				continue
			default:
			}
			if len(w.slots) <= len(batch) {
				break // nothing else is running: write now
			}
			if deadline == nil {
				timer.Reset(w.opts.CompleteDelay)
				deadline = timer.C
			}
			select {
			case o := <-w.results:
				batch = append(batch, o)
			case <-deadline:
				deadline = nil
				break gather
			}
		}
		if deadline != nil && !timer.Stop() {
			<-timer.C
		}
		continued := w.complete(ctx, batch)
		kept := make(map[int64]int, len(continued)) // workflow to the version its next attempt holds
		for _, wf := range continued {
			kept[wf.ID] = wf.Version
		}
		released := 0
		w.heldMu.Lock()
		for _, o := range batch {
			id := o.WorkflowID()
			next, ok := kept[id]
			if ok && next == o.ClaimedVersion()+1 {
				w.held[id] = append(w.held[id], next) // the same claim runs its next step
			} else {
				released++
			}
			w.forget(id, o.ClaimedVersion())
		}
		w.heldMu.Unlock()
		// A kept workflow keeps its slot and runs its next step now.
		for _, wf := range continued {
			go w.execute(ctx, wf)
		}
		for range released {
			<-w.slots
		}
		if released > 0 {
			w.poke()
		}
	}
}

// complete writes a batch, retrying while the database is unreachable, and returns the workflows
// kept for their next step. A batch that keeps failing is written one outcome at a time, so one bad
// outcome cannot hold back the others.
func (w *Worker) complete(ctx context.Context, batch []*workflow.Outcome) []*persistence.Workflow {
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		written, continued, err := w.engine.CompleteAndContinue(ctx, batch, w.keep)
		if err == nil {
			w.stats.Completed.Add(int64(len(written)))
			w.stats.Fenced.Add(int64(len(batch) - len(written)))
			for _, o := range written {
				if o.Status().Terminal() {
					w.stats.Ended.Add(1)
				}
			}
			return continued
		}
		if ctx.Err() != nil {
			return nil // shutting down hard: the release or another node's recovery takes over
		}
		if attempt >= 3 && len(batch) > 1 {
			var all []*persistence.Workflow
			for _, o := range batch {
				all = append(all, w.complete(ctx, []*workflow.Outcome{o})...)
			}
			return all
		}
		if attempt >= 3 {
			w.log.Error("completion keeps failing; recording the step as failed", "workflow", batch[0].WorkflowID(), "error", err)
			batch = []*workflow.Outcome{w.engine.FailOutcome(batch[0], err)}
		} else {
			w.log.Warn("completion failed; retrying", "error", err, "batch", len(batch))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// forget drops one attempt from held (heldMu held); the chain count goes with the last attempt.
func (w *Worker) forget(id int64, version int) {
	vs := w.held[id]
	for i, v := range vs {
		if v == version {
			vs = append(vs[:i], vs[i+1:]...)
			break
		}
	}
	if len(vs) == 0 {
		delete(w.held, id)
		delete(w.chain, id)
		return
	}
	w.held[id] = vs
}

// maxChain bounds how many steps in a row a workflow may run without being released, so that a
// long chain cannot keep due work of higher priority waiting.
const maxChain = 16

// keep decides whether a workflow whose next step is due now stays claimed for it: not while the
// pool drains, and not past maxChain steps in a row.
func (w *Worker) keep(o *workflow.Outcome) bool {
	if w.stopping.Load() {
		return false
	}
	w.heldMu.Lock()
	defer w.heldMu.Unlock()
	id := o.WorkflowID()
	if w.chain[id] >= maxChain {
		return false
	}
	w.chain[id]++
	return true
}
