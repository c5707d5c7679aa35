package cairn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/internal/maintenance"
	"github.com/cairnflow/cairn/internal/pool"
	"github.com/cairnflow/cairn/persistence"
	"github.com/prometheus/client_golang/prometheus"
)

// ErrRunning is returned by a second Run of a node.
var ErrRunning = errors.New("the node runs already")

// Node is one cairn node: the engine with its operations, a worker pool per executor group, and
// the node services. Build it with New, register definitions, then Run it.
type Node struct {
	store    *persistence.Store
	opts     Options
	log      *slog.Logger
	notifier *persistence.Notifier
	engine   *engine.Engine
	// alertOutcomes counts the webhook attempts of alert deliveries by outcome.
	alertOutcomes *prometheus.CounterVec
	pools         []*pool.Worker

	// hints run for the whole of Run, outliving the pools' drain: a draining step can still be
	// cancelled, its completion still wakes other nodes, and remote leases still run out.
	hints []maintenance.Service
	// cluster runs while the pools claim: recovery, schedules, retention, event trimming.
	cluster []maintenance.Service

	running atomic.Bool
	// onRecover, when set (by tests), is called after each recovery round with the executor the
	// recovery ran as.
	onRecover func(executorID int64)
}

// New checks the options and builds a node over a migrated store: its engine and its pools. It
// starts nothing: Run does.
func New(store *persistence.Store, opts Options) (*Node, error) {
	if store == nil {
		return nil, errors.New("invalid node options: no store")
	}
	opts, err := opts.validate()
	if err != nil {
		return nil, err
	}
	if opts.HistoryPartition != "" && store.Kind() != persistence.KindPostgres {
		return nil, fmt.Errorf("invalid node options: %w", persistence.ErrPartitionsUnsupported)
	}
	n := &Node{store: store, opts: opts, log: opts.Logger}
	n.notifier = persistence.NewNotifier(store, opts.Logger)
	n.engine = engine.New(store, engine.Options{Logger: opts.Logger, Notifier: n.notifier, Limits: opts.Limits})
	n.setupAlerts()
	if opts.Documents != nil {
		n.engine.SetCompiler(opts.Documents)
	}
	for _, group := range opts.Groups {
		n.pools = append(n.pools, pool.New(n.engine, pool.Options{
			Group:             group,
			Concurrency:       opts.Concurrency,
			PollInterval:      opts.PollInterval,
			HeartbeatInterval: opts.HeartbeatInterval,
			Expiry:            opts.Expiry,
			SessionLock:       !opts.ExpiryOnly,
			DrainTimeout:      opts.DrainTimeout,
			Host:              opts.Host,
			Logger:            opts.Logger,
		}))
	}
	if err := n.buildServices(); err != nil {
		return nil, err
	}
	return n, nil
}

// Handler returns the HTTP handler of the node's GraphQL API (package graph/server: transports,
// auth, limits, CORS, the routes in cfg.Routes), whose mutations run this node's operations and
// whose queries read its store. cfg.Engine is set to the node's engine.
func (n *Node) Handler(cfg server.Config) http.Handler {
	cfg.Engine = n.engine
	return server.New(cfg)
}

// MetricsCollectors returns the node's Prometheus collectors: each pool's counters (claims,
// completions, recoveries, steps in flight), the remote tasks' (waiting tasks, lease expiries,
// poll and wait times), flow control's (running, waiting and throttled per type) and the alert
// deliveries' outcomes.
func (n *Node) MetricsCollectors() []prometheus.Collector {
	return []prometheus.Collector{pool.NewCollector(n.pools...), pool.NewRemoteCollector(n.engine), pool.NewFlowCollector(n.engine),
		n.alertOutcomes}
}

// Run starts the worker pools and the node services, once, and runs them until ctx ends. Then it
// drains: the pools stop claiming, long polls of remote workers answer, running steps get up to
// DrainTimeout to finish, what is still held is released and the executors are marked stopped.
// Run returns once everything it started has stopped. It returns an error when a pool cannot
// register its executor (the node stops then) or when the node runs already.
func (n *Node) Run(ctx context.Context) error {
	if !n.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	hintCtx, stopHints := context.WithCancel(context.WithoutCancel(ctx))
	defer stopHints()
	stopHintServices, err := startAll(hintCtx, n.hints)
	if err != nil {
		return err
	}
	defer stopHintServices()

	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	var failure error
	var failOnce sync.Once
	var pools sync.WaitGroup
	for _, p := range n.pools {
		pools.Go(func() {
			if err := p.Run(runCtx); err != nil && ctx.Err() == nil { // not a registration cut short by the end of ctx
				failOnce.Do(func() { failure = err })
				stopRun()
			}
		})
	}
	stopClusterServices, err := startAll(runCtx, n.cluster)
	if err != nil {
		stopRun()
		pools.Wait()
		return err
	}

	<-runCtx.Done()
	n.engine.StopPolls() // long polls answer now (with no task) instead of holding up the drain
	stopClusterServices()
	pools.Wait()
	return failure
}

// startAll starts services in order and returns a function that stops them in reverse order; when
// one fails to start, those started are stopped.
func startAll(ctx context.Context, services []maintenance.Service) (stop func(), err error) {
	var started []maintenance.Service
	stop = func() {
		for i := len(started) - 1; i >= 0; i-- {
			started[i].Stop()
		}
	}
	for _, s := range services {
		if err := s.Start(ctx); err != nil {
			stop()
			return nil, fmt.Errorf("error starting the node: %w", err)
		}
		started = append(started, s)
	}
	return stop, nil
}

// recover takes over dead executors' work as the node's first pool's executor (recorded on the
// RECOVERY actions), and counts what it took over on that pool.
func (n *Node) recover(ctx context.Context) (int, error) {
	pool := n.pools[0]
	id := pool.ExecutorID()
	if id == 0 {
		return 0, nil // not registered yet
	}
	count, err := n.engine.Recover(ctx, engine.RecoverParams{ExecutorID: id})
	if count > 0 {
		pool.Stats().Recovered.Add(int64(count))
	}
	if n.onRecover != nil {
		n.onRecover(id)
	}
	return count, err
}
