// Package pool is cairn's worker pool: it registers an executor, heartbeats from its own goroutine,
// claims due workflows in batches (claim.go), runs their steps through the engine
// (engine.Execute), completes them in batches, one transaction per batch (complete.go, through
// engine.Complete), and drains gracefully on shutdown. A node (package cairn) runs one pool per
// executor group, beside the services (internal/maintenance) that recover dead executors' work,
// fire schedules and apply the retention once per node: programs run the node, never a pool.
package pool

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/internal/maintenance"
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
	// HeartbeatInterval is how often the executor heartbeats and the pool releases what it holds
	// but does not run (2s).
	HeartbeatInterval time.Duration
	// Expiry is how long after its last heartbeat an executor counts as dead (10s).
	Expiry time.Duration
	// SessionLock has the executor hold a database session lock while it lives, so that other
	// nodes declare it dead as soon as its process dies (PostgreSQL, MariaDB; see
	// persistence.ExecutorRegisterParams).
	SessionLock bool
	// DrainTimeout is how long shutdown waits for running steps before releasing them (30s).
	DrainTimeout time.Duration
	// Host names this node on its executor row (os.Hostname()).
	Host string
	// Logger receives the pool's logs (the engine's logger).
	Logger *slog.Logger
}

func (o Options) withDefaults(e *engine.Engine) Options {
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
	if e.Store().Capabilities().SingleWriter {
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
	engine *engine.Engine
	store  *persistence.Store
	opts   Options
	log    *slog.Logger

	executorID atomic.Int64
	// typesRecorded is the executor and types the claim loop last recorded (recordTypes).
	typesRecorded struct {
		executor int64
		types    []string
	}
	slots   chan struct{}
	results chan *engine.Outcome // buffered for every slot: a finished step never blocks
	drained chan struct{}        // closed when claiming stopped and the drain ended
	wake    chan struct{}
	idle    chan struct{} // signalled when a completer released the last slot: the drain looks again

	heldMu sync.Mutex
	// held lists, by workflow, the claimed versions of the attempts this pool runs and has not
	// completed yet. An attempt, not a workflow ID, is the unit: a late attempt of this node's
	// former executor (declared dead) may still run beside a new claim of the same workflow.
	held  map[int64][]int
	chain map[int64]int // steps run in a row without a release, by workflow
	// holding lists, by a sequence number, when each claim and completion in progress began:
	// what they claim the database shows before held does, so reconcile leaves alone what
	// changed since the oldest of them began.
	holding    map[uint64]time.Time
	holdingSeq uint64
	// afterClaim, when set (by tests, before Run), runs after a claim committed and before the
	// pool lists what it claimed as held.
	afterClaim func([]*persistence.Workflow)
	// handChain counts, by type and concurrency key, the slots passed on in a row on this pool.
	handChain map[string]int

	stopping atomic.Bool // the drain began: no more steps are kept, no slot is reserved (stop)
	// sweep asks the claim loop's next claim for a flow claim of every key of each
	// flow-controlled type, not only of the keys its completions freed.
	sweep atomic.Bool
	// plain asks the claim loop's next claim for the plain claim (of the types without flow
	// control): a claim for freed keys alone leaves it out, so a concurrency-limited type's
	// completions do not make the plain claim step over that type's queue in the due index.
	plain atomic.Bool

	// flow is what the last claim learnt of flow control (flow.go).
	flow flowPool

	// plainTypes are the types the last claim claimed with the plain claim (without flow
	// control): those a wake-up may claim for the pool (wake_claim.go).
	plainTypes atomic.Pointer[[]string]
	// hard is the context of the pool's steps, which outlives the drain (set by Run).
	hard context.Context
	// wakeMu orders a wake-up's reservation of slots with the start of the drain (stopping).
	wakeMu sync.Mutex

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
	// FlowThrottled counts due workflows claims passed over for a rate limit; FlowCancelled the
	// workflows cancelled for a concurrency strategy.
	FlowThrottled atomic.Int64
	FlowCancelled atomic.Int64
	// FlowHandedOn counts the workflows claimed in the completion that freed their key's slot.
	FlowHandedOn atomic.Int64
	// ClaimedOnWake counts the workflows claimed in the transaction of the remote result that
	// woke them (they are counted in Claimed too).
	ClaimedOnWake atomic.Int64
}

// Stats returns the pool's counters.
func (w *Worker) Stats() *Stats { return &w.stats }

// New returns a Worker over an engine. Call Run to start it.
func New(e *engine.Engine, opts Options) *Worker {
	opts = opts.withDefaults(e)
	return &Worker{
		engine: e, store: e.Store(), opts: opts, log: opts.Logger.With("group", opts.Group),
		slots:     make(chan struct{}, opts.Concurrency),
		results:   make(chan *engine.Outcome, opts.Concurrency),
		drained:   make(chan struct{}),
		wake:      make(chan struct{}, 1),
		idle:      make(chan struct{}, 1),
		held:      map[int64][]int{},
		holding:   map[uint64]time.Time{},
		chain:     map[int64]int{},
		handChain: map[string]int{},
	}
}

// ExecutorID is the executor this pool runs as (0 before Run registers it; it changes when the
// executor was declared dead and registers again).
func (w *Worker) ExecutorID() int64 { return w.executorID.Load() }

// InFlight is how many steps the pool runs now (claimed and not yet completed).
func (w *Worker) InFlight() int { return len(w.slots) }

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
	w.hard = hard

	heartbeat, err := maintenance.NewHeartbeat(maintenance.HeartbeatConfig{Store: w.store, ExecutorID: w.ExecutorID,
		Interval: w.opts.HeartbeatInterval, Expiry: w.opts.Expiry, DeclaredDead: w.declaredDead, Logger: w.log})
	if err != nil {
		return err
	}
	if err := heartbeat.Start(ctx); err != nil {
		return err
	}
	defer heartbeat.Stop()

	var bg sync.WaitGroup
	bg.Add(2)
	go func() { defer bg.Done(); w.reconcileLoop(ctx) }()
	go func() { defer bg.Done(); w.listenWake(ctx) }()

	var completers sync.WaitGroup
	for range w.opts.Completers {
		completers.Add(1)
		go func() { defer completers.Done(); w.completeLoop(hard) }()
	}
	completerDone := make(chan struct{})
	go func() { completers.Wait(); close(completerDone) }()

	w.engine.SetWakeClaimer(w.opts.Group, w)
	w.claimLoop(ctx, hard)
	w.stop()

	w.drain()
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

// drain waits, up to DrainTimeout, until every claimed workflow's step is completed: a slot is
// released only once its outcome is written, and the completer signals idle when it releases the
// last one.
func (w *Worker) drain() {
	deadline := time.NewTimer(w.opts.DrainTimeout)
	defer deadline.Stop()
	for len(w.slots) > 0 {
		select {
		case <-w.idle:
		case <-deadline.C:
			w.log.Warn("drain timeout: releasing steps still running", "timeout", w.opts.DrainTimeout, "running", len(w.slots))
			return
		}
	}
}

func (w *Worker) register(ctx context.Context) error {
	e, err := w.store.ExecutorRegister(ctx, persistence.ExecutorRegisterParams{Host: w.opts.Host, PID: os.Getpid(), Group: w.opts.Group, Expiry: w.opts.Expiry,
		SessionLock: w.opts.SessionLock, LockGrace: 2 * w.opts.HeartbeatInterval})
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
	if n, err := w.engine.Recover(ctx, engine.RecoverParams{ExecutorID: id, Stopping: true}); err != nil {
		w.log.Error("error releasing held workflows", "error", err)
	} else if n > 0 {
		w.log.Info("released workflows still held at shutdown", "count", n)
	}
	w.log.Info("worker stopped", "executor", id)
}

// beginHolding notes that a claim or a completion, which may leave this executor holding
// workflows that held does not list yet, begins; the caller removes it from holding (heldMu
// held) once held lists them.
func (w *Worker) beginHolding() uint64 {
	now := persistence.Now()
	w.heldMu.Lock()
	defer w.heldMu.Unlock()
	w.holdingSeq++
	w.holding[w.holdingSeq] = now
	return w.holdingSeq
}

// endHolding removes a claim or completion that failed from holding.
func (w *Worker) endHolding(op uint64) {
	w.heldMu.Lock()
	delete(w.holding, op)
	w.heldMu.Unlock()
}
