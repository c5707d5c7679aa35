package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/internal/maintenance"
	"github.com/cairnflow/cairn/internal/pool"
	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/benchdata"
	"github.com/cairnflow/cairn/workflow"
	"github.com/cairnflow/cairn/workflow/demo"
)

// benchConfig is the configuration of cairn bench, read from flags and their CAIRN_* twins.
type benchConfig struct {
	database      string
	definition    string
	input         string
	count         int
	preload       int
	duration      time.Duration
	rate          float64
	workers       int
	claimBatch    int
	completeBatch int
	completers    int
	pollInterval  time.Duration
	nodes         int
	maxConns      int
	keep          bool
	json          bool
	logLevel      string
	cpuProfile    string
	// api, when set, is the GraphQL URL of a running node to start workflows through instead.
	api apiBenchConfig
	// flow is the flow control the run sets, its keys and its probes.
	flow benchFlow
}

// benchStartBatch is how many workflows one StartMany call inserts in --count mode.
const benchStartBatch = 1000

// benchReadBatch is how many workflows one read-back statement covers.
const benchReadBatch = 1000

func parseBenchConfig(env *environment, args []string) (*benchConfig, error) {
	fs := newFlagSet("bench", "cairn bench [--count N | --duration D --rate R] [flags]\n\n"+
		"Runs the engine in this process (no HTTP) and measures workflows/s, steps/s and latencies.\n"+
		"Point it at a throwaway database: it migrates it, and on a database you name it deletes the\n"+
		"workflows, history and executors it made afterwards (unless --keep), but live nodes on the\n"+
		"same database would take part in the run and skew it.")
	c := &benchConfig{}
	fs.StringVar(&c.database, "database", "", "database `URL` (sqlite:///path.db, postgres://... or mysql://...); default: a fresh temporary SQLite file, removed afterwards")
	fs.StringVar(&c.definition, "definition", "bench.noop", "definition to run: bench.noop, demo.order, or a deployed type (cairn definitions apply)")
	fs.StringVar(&c.input, "input", "{}", "input of every workflow, a JSON `object` (demo.order: {\"shipDelayMs\": 5})")
	fs.IntVar(&c.count, "count", 0, "insert `N` workflows in bulk, then start the workers and drain them")
	fs.IntVar(&c.preload, "preload", 0, "first fill the database with `N` ended workflows of --definition with their history (kept afterwards), to measure on a database like one after weeks of traffic")
	fs.DurationVar(&c.duration, "duration", 0, "start workflows continuously at --rate while the workers run, for this long, then wait for the rest")
	fs.Float64Var(&c.rate, "rate", 1000, "starts per second with --duration")
	fs.IntVar(&c.workers, "workers", 8000, "steps each worker pool runs at once (its concurrency)")
	fs.IntVar(&c.claimBatch, "claim-batch", 0, "most workflows one claim takes (default: a quarter of --workers)")
	fs.IntVar(&c.completeBatch, "complete-batch", 0, "most outcomes one completion transaction writes (default: a quarter of --workers, 100 to 2000)")
	fs.IntVar(&c.completers, "completers", 0, "completion transactions a pool runs at once (default: the worker's; always 1 on SQLite)")
	fs.DurationVar(&c.pollInterval, "poll-interval", 100*time.Millisecond, "how often an idle pool looks for due work when no wake-up arrives")
	fs.IntVar(&c.nodes, "nodes", 1, "worker pools to run in this process, each its own executor")
	fs.IntVar(&c.maxConns, "max-conns", 20, "database connection pool size on PostgreSQL and MariaDB/MySQL (SQLite always uses one connection)")
	fs.BoolVar(&c.keep, "keep", false, "keep the workflows, history and executors of the run in the database")
	fs.BoolVar(&c.json, "json", false, "print the figures as one JSON object")
	fs.StringVar(&c.logLevel, "log-level", "warn", "log `level` of the engine's logs on stderr: debug, info, warn or error")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the run, from the workers' start to the last workflow's end, to this `file` (read it with go tool pprof)")
	fs.StringVar(&c.api.url, "api", "", "instead of running the engine here, start --count workflows through the GraphQL API at this `URL` (http://host:port/graphql of a running cairn serve), one per request from --clients clients, and measure starts/s, start latency and workflows/s end to end")
	fs.IntVar(&c.api.clients, "clients", 64, "with --api: concurrent clients, each sending one request at a time")
	fs.StringVar(&c.api.token, "token", "", "with --api: the API `token` to send (a node started with --auth)")
	fs.DurationVar(&c.api.timeout, "timeout", 10*time.Minute, "with --api: how long to wait for the started workflows to finish")
	c.flow.flags(fs)
	positional, err := fs.parse(args, env.getenv, env.stdout)
	if err != nil {
		return nil, err
	}
	if len(positional) > 0 {
		return nil, usagef("unexpected argument %q (see cairn bench -h)", positional[0])
	}
	if c.api.url != "" {
		switch {
		case c.count < 1:
			return nil, usagef("--api needs --count N, the workflows to start")
		case c.duration > 0:
			return nil, usagef("--api takes --count, not --duration")
		case c.api.clients < 1:
			return nil, usagef("--clients must be at least 1, not %d", c.api.clients)
		case c.api.timeout <= 0:
			return nil, usagef("--timeout must be positive, not %s", c.api.timeout)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(c.input), &obj); err != nil || obj == nil {
			return nil, usagef("--input must be a JSON object, not %q", c.input)
		}
		c.api.definition, c.api.input, c.api.count, c.api.json = c.definition, c.input, c.count, c.json
		return c, nil
	}
	switch {
	case c.count < 0:
		return nil, usagef("--count must be positive, not %d", c.count)
	case c.preload < 0 || c.preload > maxPreload:
		return nil, usagef("--preload must be between 0 and %d, not %d", maxPreload, c.preload)
	case c.duration < 0:
		return nil, usagef("--duration must be positive, not %s", c.duration)
	case c.count > 0 && c.duration > 0:
		return nil, usagef("--count and --duration exclude each other")
	case c.count == 0 && c.duration == 0:
		return nil, usagef("give --count N or --duration D (see cairn bench -h)")
	case c.duration > 0 && c.rate <= 0:
		return nil, usagef("--rate must be positive, not %g", c.rate)
	case c.workers < 1:
		return nil, usagef("--workers must be at least 1, not %d", c.workers)
	case c.nodes < 1:
		return nil, usagef("--nodes must be at least 1, not %d", c.nodes)
	case c.claimBatch < 0 || c.completeBatch < 0 || c.completers < 0:
		return nil, usagef("--claim-batch, --complete-batch and --completers must not be negative")
	case c.pollInterval <= 0:
		return nil, usagef("--poll-interval must be positive, not %s", c.pollInterval)
	case c.maxConns < 1:
		return nil, usagef("--max-conns must be at least 1, not %d", c.maxConns)
	}
	if err := c.flow.check(); err != nil {
		return nil, err
	}
	known := false
	var names []string
	for _, d := range demo.Definitions() {
		names = append(names, d.Type)
		known = known || d.Type == c.definition
	}
	if !known && !strings.Contains(c.definition, ".") {
		return nil, usagef("unknown --definition %q: want one of %v or a deployed type (namespace.name)", c.definition, names)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(c.input), &obj); err != nil || obj == nil {
		return nil, usagef("--input must be a JSON object, not %q", c.input)
	}
	return c, nil
}

// benchReport is what cairn bench prints; with --json, as one object.
type benchReport struct {
	Database        string  `json:"database"`
	Definition      string  `json:"definition"`
	Mode            string  `json:"mode"`
	Nodes           int     `json:"nodes"`
	Workers         int     `json:"workers"`
	Count           int     `json:"count"`
	Finished        int     `json:"finished"`
	Steps           int     `json:"steps"`
	Seconds         float64 `json:"seconds"`
	WorkflowsPerSec float64 `json:"workflows_per_sec"`
	StepsPerSec     float64 `json:"steps_per_sec"`
	StartsPerSec    float64 `json:"starts_per_sec,omitempty"`
	FirstStepP50ms  float64 `json:"first_step_p50_ms"`
	FirstStepP90ms  float64 `json:"first_step_p90_ms"`
	FirstStepP99ms  float64 `json:"first_step_p99_ms"`
	FinishP50ms     float64 `json:"finish_p50_ms"`
	FinishP99ms     float64 `json:"finish_p99_ms"`
	InsertSeconds   float64 `json:"insert_seconds,omitempty"`
	FlowKeys        int     `json:"flow_keys,omitempty"`
	FlowLimit       int     `json:"flow_limit,omitempty"`
	RateLimit       string  `json:"rate_limit,omitempty"`
	Probes          int     `json:"probes,omitempty"`
	ProbeP50ms      float64 `json:"probe_first_step_p50_ms,omitempty"`
	ProbeP99ms      float64 `json:"probe_first_step_p99_ms,omitempty"`
	Preloaded       int     `json:"preloaded,omitempty"`
	PreloadSeconds  float64 `json:"preload_seconds,omitempty"`
}

// runBench runs cairn bench: it migrates the database, starts the workflows (all before the workers
// in --count mode, continuously in --duration mode), runs the worker pools until every workflow has
// ended, reads the rows back in bulk for the figures, and cleans up after itself.
func runBench(ctx context.Context, env *environment, args []string) (err error) {
	cfg, err := parseBenchConfig(env, args)
	if err != nil {
		return err
	}
	if cfg.api.url != "" {
		return runAPIBench(ctx, env, &cfg.api)
	}
	log, err := newLogger(env.stderr, cfg.logLevel, "text")
	if err != nil {
		return err
	}
	tuneCollector(env.getenv) // the engine runs here as in a node
	ctx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()

	url := cfg.database
	if url == "" {
		dir, err := os.MkdirTemp("", "cairn-bench-")
		if err != nil {
			return fmt.Errorf("error creating a temporary folder for the database: %w", err)
		}
		defer os.RemoveAll(dir)
		url = "sqlite://" + dir + "/bench.db"
	}
	store, err := persistence.Open(ctx, url, persistence.OpenOptions{MaxConns: cfg.maxConns})
	if err != nil {
		return err
	}
	defer store.Close()
	if _, err := store.Migrate(ctx); err != nil {
		return err
	}

	b := &bench{cfg: cfg, store: store, log: log}
	if err := b.snapshot(ctx); err != nil {
		return err
	}
	// Clean up whatever happens, on a context that outlives an interrupt.
	defer func() {
		if cfg.keep || cfg.database == "" {
			return
		}
		cleanCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
		defer cancel()
		if cerr := b.cleanUp(cleanCtx); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()

	report, err := b.run(ctx)
	if err != nil {
		return err
	}
	report.Database = store.URL()
	if cfg.database == "" {
		report.Database = "temporary SQLite file"
	}
	return printBenchReport(env.stdout, report, cfg.json)
}

// bench is one run of cairn bench.
type bench struct {
	cfg   *benchConfig
	store *persistence.Store
	log   *slog.Logger

	// What existed before the run, so cleanUp removes only what the run made.
	maxExecutorID int64
	definitionIDs map[int64]bool

	mu  sync.Mutex
	ids []int64 // the workflows the run started
}

// snapshot records the executors and definitions that exist before the run.
func (b *bench) snapshot(ctx context.Context) error {
	execs, err := b.store.ExecutorList(ctx)
	if err != nil {
		return err
	}
	for _, e := range execs {
		b.maxExecutorID = max(b.maxExecutorID, e.ID)
	}
	defs, err := b.store.DefinitionList(ctx, persistence.DefinitionListParams{AllVersions: true})
	if err != nil {
		return err
	}
	b.definitionIDs = map[int64]bool{}
	for _, d := range defs {
		b.definitionIDs[d.ID] = true
	}
	return nil
}

func (b *bench) run(ctx context.Context) (*benchReport, error) {
	cfg := b.cfg
	notifier := persistence.NewNotifier(b.store, b.log)
	engine := engine.New(b.store, engine.Options{Logger: b.log, Notifier: notifier})
	serverless.Install(engine, serverless.Options{})
	if err := demo.Register(ctx, engine); err != nil {
		return nil, err
	}
	if _, err := b.store.DefinitionGet(ctx, persistence.DefinitionGetParams{Type: cfg.definition}); errors.Is(err, persistence.ErrNotFound) {
		var names []string
		for _, d := range demo.Definitions() {
			names = append(names, d.Type)
		}
		return nil, usagef("unknown --definition %q: want one of %v or a deployed type (cairn definitions apply)", cfg.definition, names)
	}
	clearFlow, err := cfg.flow.set(ctx, engine, cfg.definition)
	if err != nil {
		return nil, err
	}
	defer clearFlow()
	bgCtx, stopBackground := context.WithCancel(ctx)
	var background sync.WaitGroup
	background.Go(func() { notifier.Run(bgCtx) })
	defer func() {
		stopBackground()
		background.Wait()
	}()
	// As on a node, from before the first start: a database refilled since its tables were analyzed
	// empty gets fresh statistics within a second, not when autovacuum next comes by.
	stats, err := maintenance.NewStatistics(maintenance.StatisticsConfig{Interval: maintenance.StatisticsInterval,
		Refresh: b.store.RefreshStaleStatistics, Logger: b.log})
	if err != nil {
		return nil, err
	}
	if err := stats.Start(bgCtx); err != nil {
		return nil, err
	}
	defer stats.Stop()

	report := &benchReport{Definition: cfg.definition, Nodes: cfg.nodes, Workers: cfg.workers,
		FlowKeys: cfg.flow.keys, FlowLimit: cfg.flow.limit, RateLimit: cfg.flow.rateLimit}
	if cfg.preload > 0 {
		began := time.Now()
		if err := b.preload(ctx, engine, cfg.preload); err != nil {
			return nil, err
		}
		report.Preloaded, report.PreloadSeconds = cfg.preload, time.Since(began).Seconds()
	}
	if cfg.count > 0 {
		report.Mode = "count"
		began := time.Now()
		for i := 0; i < cfg.count; i += benchStartBatch {
			if err := b.start(ctx, engine, min(benchStartBatch, cfg.count-i)); err != nil {
				return nil, err
			}
		}
		report.InsertSeconds = time.Since(began).Seconds()
	} else {
		report.Mode = "duration"
	}

	// The timer starts with the workers.
	stopProfile, err := startCPUProfile(cfg.cpuProfile)
	if err != nil {
		return nil, err
	}
	defer stopProfile()
	began := time.Now()
	poolCtx, stopPools := context.WithCancel(ctx)
	defer stopPools()
	var pools sync.WaitGroup
	poolErrs := make(chan error, cfg.nodes)
	for range cfg.nodes {
		w := pool.New(engine, pool.Options{
			Concurrency:   cfg.workers,
			ClaimBatch:    cfg.claimBatch,
			CompleteBatch: cfg.completeBatch,
			Completers:    cfg.completers,
			PollInterval:  cfg.pollInterval,
			Logger:        b.log,
		})
		pools.Go(func() {
			if err := w.Run(poolCtx); err != nil {
				poolErrs <- err
				stopPools()
			}
		})
	}
	stop := func() {
		stopPools()
		pools.Wait()
	}

	var probes sync.WaitGroup
	probeErr := make(chan error, 1)
	if cfg.flow.probes > 0 {
		probes.Go(func() { probeErr <- b.probe(poolCtx, engine) })
	}
	if cfg.duration > 0 {
		n, err := b.startAtRate(poolCtx, engine, began)
		if err != nil {
			stop()
			return nil, err
		}
		report.StartsPerSec = float64(n) / cfg.duration.Seconds()
	}
	probes.Wait() // the probes are among the workflows to wait for
	if cfg.flow.probes > 0 {
		if err := <-probeErr; err != nil {
			stop()
			return nil, err
		}
	}
	ended, err := b.waitEnded(poolCtx)
	stopProfile()
	stop()
	close(poolErrs)
	if perr := <-poolErrs; perr != nil {
		return nil, perr
	}
	if err != nil {
		return nil, err
	}
	if err := b.measure(ctx, report, began, ended); err != nil {
		return nil, err
	}
	if err := b.measureProbes(ctx, report); err != nil {
		return nil, err
	}
	return report, nil
}

// start starts n workflows in one call and remembers their IDs.
func (b *bench) start(ctx context.Context, engine *engine.Engine, n int) error {
	ps := make([]workflow.StartParams, n)
	for i := range ps {
		ps[i] = workflow.StartParams{Type: b.cfg.definition, Input: json.RawMessage(b.cfg.input)}
		b.cfg.flow.key(&ps[i])
	}
	res, err := engine.StartMany(ctx, ps)
	if err != nil {
		return fmt.Errorf("error starting %d workflows: %w", n, err)
	}
	b.mu.Lock()
	for _, r := range res {
		b.ids = append(b.ids, r.Workflow.ID)
	}
	b.mu.Unlock()
	return nil
}

// startAtRate starts workflows at --rate for --duration in small batches, every 10ms as many as are
// due, and returns how many it started.
func (b *bench) startAtRate(ctx context.Context, engine *engine.Engine, began time.Time) (int, error) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	started := 0
	for {
		elapsed := time.Since(began)
		if elapsed >= b.cfg.duration {
			elapsed = b.cfg.duration
		}
		due := int(b.cfg.rate * elapsed.Seconds())
		for started < due {
			n := min(due-started, benchStartBatch)
			if err := b.start(ctx, engine, n); err != nil {
				return started, err
			}
			started += n
		}
		if elapsed >= b.cfg.duration {
			return started, nil
		}
		select {
		case <-ctx.Done():
			return started, ctx.Err()
		case <-tick.C:
		}
	}
}

// openStatuses are the statuses of a workflow that has not ended yet. MANUAL counts as ended: a run
// whose steps fail must not wait forever.
var openStatuses = []persistence.Status{persistence.StatusCreated, persistence.StatusInProgress,
	persistence.StatusExecuting, persistence.StatusWaiting, persistence.StatusPaused}

// waitEnded polls until none of the run's workflows is open, and returns when it saw that.
func (b *bench) waitEnded(ctx context.Context) (time.Time, error) {
	lo, hi := b.idRange()
	for {
		// The run's workflows never open again once ended, so the search starts from the oldest
		// one still open: each look reads a few rows, not the whole run.
		open, err := benchdata.WorkflowFirstInIDRange(ctx, b.store, benchdata.WorkflowIDRangeParams{FromID: lo, ToID: hi, Statuses: openStatuses})
		if err != nil {
			return time.Time{}, err
		}
		if open == 0 {
			return time.Now(), nil
		}
		lo = open
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("stopped with workflow %d (and maybe others after it) still open: %w", open, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (b *bench) idRange() (lo, hi int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.ids) == 0 {
		return 0, -1
	}
	return slices.Min(b.ids), slices.Max(b.ids)
}

// measure reads the run's workflows and task instances back, a batch of IDs per statement, and
// fills the report. The run ends at the last workflow's finish (or when waitEnded saw the end, for
// workflows that ended without one).
func (b *bench) measure(ctx context.Context, r *benchReport, began, ended time.Time) error {
	b.mu.Lock()
	ids := slices.Clone(b.ids)
	b.mu.Unlock()
	r.Count = len(ids)
	firstStep := make([]time.Duration, 0, len(ids))
	finish := make([]time.Duration, 0, len(ids))
	var last time.Time
	unfinished := false
	for i := 0; i < len(ids); i += benchReadBatch {
		chunk := ids[i:min(len(ids), i+benchReadBatch)]
		wfs, err := b.store.WorkflowGetMany(ctx, chunk)
		if err != nil {
			return err
		}
		tis, err := b.store.TaskInstanceList(ctx, persistence.TaskInstanceListParams{WorkflowIDs: chunk})
		if err != nil {
			return err
		}
		first := make(map[int64]time.Time, len(chunk))
		for _, ti := range tis {
			r.Steps++
			if t, ok := first[ti.WorkflowID]; !ok || ti.Started.Before(t) {
				first[ti.WorkflowID] = ti.Started
			}
		}
		for _, w := range wfs {
			if t, ok := first[w.ID]; ok {
				firstStep = append(firstStep, t.Sub(w.Created))
			}
			if w.Status == persistence.StatusFinished && w.Finished != nil {
				r.Finished++
				finish = append(finish, w.Finished.Sub(w.Created))
				if w.Finished.After(last) {
					last = *w.Finished
				}
			} else {
				unfinished = true
			}
		}
	}
	if unfinished || last.IsZero() {
		last = ended
	}
	elapsed := last.Sub(began)
	if elapsed <= 0 {
		elapsed = ended.Sub(began)
	}
	r.Seconds = elapsed.Seconds()
	r.WorkflowsPerSec = float64(r.Count) / r.Seconds
	r.StepsPerSec = float64(r.Steps) / r.Seconds
	slices.Sort(firstStep)
	slices.Sort(finish)
	r.FirstStepP50ms, r.FirstStepP90ms, r.FirstStepP99ms = percentileMs(firstStep, 50), percentileMs(firstStep, 90), percentileMs(firstStep, 99)
	r.FinishP50ms, r.FinishP99ms = percentileMs(finish, 50), percentileMs(finish, 99)
	return nil
}

// cleanUp deletes what the run made in a database it was given: its workflows with their rows, its
// executors, and definitions it registered for the first time. The tables stay.
func (b *bench) cleanUp(ctx context.Context) error {
	b.mu.Lock()
	ids := slices.Clone(b.ids)
	b.mu.Unlock()
	for i := 0; i < len(ids); i += benchReadBatch * 10 {
		if _, err := benchdata.WorkflowDelete(ctx, b.store, ids[i:min(len(ids), i+benchReadBatch*10)]); err != nil {
			return fmt.Errorf("error cleaning up: %w", err)
		}
	}
	host, _ := os.Hostname()
	if err := benchdata.ExecutorDelete(ctx, b.store, benchdata.ExecutorDeleteParams{AfterID: b.maxExecutorID, Host: host, PID: os.Getpid()}); err != nil {
		return fmt.Errorf("error cleaning up: %w", err)
	}
	defs, err := b.store.DefinitionList(ctx, persistence.DefinitionListParams{AllVersions: true})
	if err != nil {
		return err
	}
	demoTypes := map[string]bool{}
	for _, d := range demo.Definitions() {
		demoTypes[d.Type] = true
	}
	var fresh []int64
	for _, d := range defs {
		if !b.definitionIDs[d.ID] && demoTypes[d.Type] {
			fresh = append(fresh, d.ID)
		}
	}
	if err := benchdata.DefinitionDelete(ctx, b.store, fresh); err != nil {
		return fmt.Errorf("error cleaning up: %w", err)
	}
	return nil
}
