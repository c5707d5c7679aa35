package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/cairnflow/cairn"
	"github.com/cairnflow/cairn/internal/replicas"
	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/internal/tracing"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
	"github.com/cairnflow/cairn/workflow/demo"
)

// serveConfig is the configuration of cairn serve, read from flags and their CAIRN_* twins.
type serveConfig struct {
	database       string
	addr           string
	demo           bool
	noWorkers      bool
	noAPI          bool
	noMigrate      bool
	groups         string
	concurrency    int
	pollInterval   time.Duration
	heartbeat      time.Duration
	recovery       time.Duration
	pooler         string
	pooled         bool
	sessionLocks   bool
	expiry         time.Duration
	drainTimeout   time.Duration
	retention      time.Duration
	eventRetention time.Duration
	partition      string
	replicas       replicaFlags
	readRouter     *replicas.Router
	maxConns       int
	logLevel       string
	logFormat      string
	introspection  bool
	auth           bool
	origins        string
	definitions    string
	httpAllow      string
	httpDeny       string
	dashboardURL   string
	httpTimeout    time.Duration
	httpMaxBytes   int64
	grpcProtoDir   string
	secretsFile    string
	limits         apiLimits
	workflowLimits workflowLimits
	exprs          exprLimits
	run            runLimits
	async          asyncLimits
}

func parseServeConfig(env *environment, args []string) (*serveConfig, error) {
	fs := newFlagSet("serve", "cairn serve [flags]")
	c := &serveConfig{}
	databaseFlag(fs, &c.database)
	poolerFlag(fs, &c.pooler)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8080", "`host:port` of the HTTP server (GraphiQL at /, GraphQL at /graphql, /healthz, /readyz); port 0 picks a free one")
	fs.BoolVar(&c.demo, "demo", false, "register the demo definitions (demo.order, demo.approval, demo.fanout, bench.noop)")
	fs.BoolVar(&c.noWorkers, "no-workers", false, "run no worker pool on this node (API only)")
	fs.BoolVar(&c.noAPI, "no-api", false, "run no HTTP server on this node (workers only)")
	fs.BoolVar(&c.noMigrate, "no-migrate", false, "do not migrate the database on start; refuse to start when it is not migrated")
	fs.StringVar(&c.groups, "group", workflow.DefaultGroup, "executor `groups` whose workflows this node runs, comma-separated (one pool each)")
	fs.IntVar(&c.concurrency, "concurrency", 100, "steps each worker pool runs at once")
	fs.DurationVar(&c.pollInterval, "poll-interval", time.Second, "how often an idle pool looks for due work when no wake-up arrives")
	fs.DurationVar(&c.heartbeat, "heartbeat-interval", 2*time.Second, "how often the node heartbeats and looks for dead nodes' work")
	fs.DurationVar(&c.expiry, "executor-expiry", 10*time.Second, "how long after its last heartbeat a node counts as dead and its work is taken over")
	fs.DurationVar(&c.recovery, "recovery-interval", time.Second, "how often the node looks for dead nodes' work (at most --heartbeat-interval)")
	fs.BoolVar(&c.sessionLocks, "session-locks", true, "on PostgreSQL and MariaDB, hold a database session lock per executor so a killed node is declared dead as soon as its session ends; false behind a transaction-mode pooler (expiry alone then)")
	fs.DurationVar(&c.retention, "retention", 0, "delete workflows (with their history) that ended longer ago than this, e.g. 720h; 0 keeps everything")
	fs.DurationVar(&c.eventRetention, "event-retention", 24*time.Hour, "delete change events (what subscriptions resume from) older than this; 0 keeps them all")
	partitionFlag(fs, &c.partition)
	c.replicas.register(fs)
	fs.DurationVar(&c.drainTimeout, "drain-timeout", 30*time.Second, "on shutdown, how long to wait for running steps and HTTP requests")
	fs.IntVar(&c.maxConns, "max-conns", 20, "database connection pool size on PostgreSQL and MariaDB/MySQL (SQLite always uses one connection)")
	fs.StringVar(&c.logLevel, "log-level", "info", "log `level`: debug, info, warn or error")
	fs.StringVar(&c.logFormat, "log-format", "text", "log `format`: text or json")
	fs.BoolVar(&c.introspection, "introspection", true, "allow GraphQL introspection (GraphiQL needs it)")
	fs.BoolVar(&c.auth, "auth", false, "require an API token (cairn token create) on every GraphQL request; reader tokens may not mutate")
	fs.StringVar(&c.definitions, "definitions", "", "deploy every *.yaml, *.yml and *.json Serverless Workflow document of this `directory` at start")
	fs.StringVar(&c.httpAllow, "http-allow", "", "host `patterns` (example.com, *.example.com) that call: http tasks may reach, comma-separated; empty: every public host. A host listed here may resolve to a private address")
	fs.StringVar(&c.httpDeny, "http-deny", "", "host `patterns` that call: http tasks may never reach, comma-separated (wins over --http-allow)")
	fs.DurationVar(&c.httpTimeout, "http-timeout", serverless.DefaultHTTPTimeout, "how long one call: http task's request may take")
	fs.Int64Var(&c.httpMaxBytes, "http-max-response-bytes", serverless.DefaultMaxResponseBytes, "the largest response body a call: http task reads")
	fs.StringVar(&c.grpcProtoDir, "grpc-proto-dir", "", "the `directory` call: grpc tasks read file: protos from (file://app/greet.proto is <directory>/app/greet.proto); empty: none")
	fs.StringVar(&c.dashboardURL, "dashboard-url", "", "the dashboard's public base `URL` (https://cairn.example.com/): alert webhooks then link to the workflow's page")
	fs.StringVar(&c.secretsFile, "secrets-file", "", "a YAML or JSON object `file` of secrets deployed definitions read as $secrets (besides CAIRN_SECRET_<NAME> variables)")
	fs.StringVar(&c.origins, "allowed-origins", "", "browser `origins` besides the server's own allowed to call the API (CORS) and open websocket subscriptions, comma-separated host patterns (app.example.com, *.example.com) or scheme://host")
	c.limits.register(fs)
	c.workflowLimits.register(fs)
	c.exprs.register(fs)
	c.run.register(fs)
	c.async.register(fs)
	positional, err := fs.parse(args, env.getenv, env.stdout)
	if err != nil {
		return nil, err
	}
	if len(positional) > 0 {
		return nil, usagef("unexpected argument %q (see cairn serve -h)", positional[0])
	}
	if c.noAPI && c.noWorkers {
		return nil, usagef("--no-api and --no-workers together leave nothing to run")
	}
	if c.retention < 0 {
		return nil, usagef("--retention must not be negative, not %s", c.retention)
	}
	if c.eventRetention < 0 {
		return nil, usagef("--event-retention must not be negative, not %s", c.eventRetention)
	}
	if err := checkPartitionFlag(c.partition, c.database, c.retention); err != nil {
		return nil, err
	}
	if err := c.replicas.check(c.database); err != nil {
		return nil, err
	}
	if c.pooled, err = poolerOption(c.pooler); err != nil {
		return nil, err
	}
	if c.recovery <= 0 {
		return nil, usagef("--recovery-interval must be positive, not %s", c.recovery)
	}
	if c.concurrency < 1 {
		return nil, usagef("--concurrency must be at least 1, not %d", c.concurrency)
	}
	if len(c.groupList()) == 0 {
		return nil, usagef("--group names no executor group")
	}
	if err := c.limits.check(); err != nil {
		return nil, err
	}
	if err := c.workflowLimits.check(); err != nil {
		return nil, err
	}
	if err := c.async.check(); err != nil {
		return nil, err
	}
	if err := c.run.check(); err != nil {
		return nil, err
	}
	if err := c.exprs.check(); err != nil {
		return nil, err
	}
	return c, nil
}

// groupList returns the executor groups of --group, without blanks and repeats.
func (c *serveConfig) groupList() []string {
	var out []string
	seen := map[string]bool{}
	for _, g := range strings.Split(c.groups, ",") {
		g = strings.TrimSpace(g)
		if g != "" && !seen[g] {
			seen[g] = true
			out = append(out, g)
		}
	}
	return out
}

// originList returns the origins of --allowed-origins.
func (c *serveConfig) originList() []string {
	var out []string
	for _, o := range strings.Split(c.origins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			out = append(out, o)
		}
	}
	return out
}

// runServe runs a cairn node until SIGINT or SIGTERM. Everything that can fail because of the
// database or the address (opening, the schema check, migrating, listening) happens before any
// worker starts, so bad input ends the process with one line and nothing started.
func runServe(ctx context.Context, env *environment, args []string) error {
	cfg, err := parseServeConfig(env, args)
	if err != nil {
		return err
	}
	log, err := newLogger(env.stderr, cfg.logLevel, cfg.logFormat)
	if err != nil {
		return err
	}
	slog.SetDefault(log)
	gcPercent, memLimit := tuneCollector(env.getenv)

	ctx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()

	// Traces, when the standard OTEL_* environment asks for them (a no-op otherwise).
	stopTracing, err := tracing.Setup(ctx, version)
	if err != nil {
		return err
	}
	defer func() {
		flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := stopTracing(flush); err != nil {
			log.Warn("error flushing traces", "error", err)
		}
	}()
	if tracing.Enabled() {
		log.Info("tracing to OTLP")
	}

	// Listen first: a taken address fails before the database is touched.
	var ln net.Listener
	if !cfg.noAPI {
		if ln, err = net.Listen("tcp", cfg.addr); err != nil {
			return fmt.Errorf("error listening on %s: %w", cfg.addr, err)
		}
		defer ln.Close() // for the early returns below; Shutdown closes it otherwise
	}

	store, err := persistence.Open(ctx, cfg.database, persistence.OpenOptions{MaxConns: cfg.maxConns, Pooler: cfg.pooled})
	if err != nil {
		return err
	}
	storeClosed := false
	defer func() {
		if !storeClosed {
			_ = store.Close()
		}
	}()
	if err := prepareSchema(ctx, store, cfg.noMigrate, log); err != nil {
		return err
	}
	partition, err := preparePartitions(ctx, store, cfg.partition, cfg.retention, log)
	if err != nil {
		return err
	}
	if cfg.readRouter, err = cfg.replicas.open(ctx, store, cfg.maxConns, log); err != nil {
		return err
	}
	if cfg.readRouter != nil {
		defer cfg.readRouter.Close()
	}

	var groups []string
	if !cfg.noWorkers {
		groups = cfg.groupList()
	}
	secrets, err := loadSecrets(cfg.secretsFile, os.Environ())
	if err != nil {
		return err
	}
	node, err := cairn.New(store, cairn.Options{
		Logger:            log,
		Limits:            cfg.workflowLimits.options(),
		Groups:            groups,
		NoWorkers:         cfg.noWorkers,
		Concurrency:       cfg.concurrency,
		PollInterval:      cfg.pollInterval,
		HeartbeatInterval: cfg.heartbeat,
		Expiry:            cfg.expiry,
		RecoveryInterval:  min(cfg.recovery, cfg.heartbeat),
		ExpiryOnly:        !cfg.sessionLocks,
		DrainTimeout:      cfg.drainTimeout,
		Retention:         cfg.retention,
		EventRetention:    cfg.eventRetention,
		HistoryPartition:  partition,
		// Alert webhooks follow the host rules of call: http tasks.
		Alerts: cairn.AlertOptions{HTTP: serverless.HTTPOptions{Allow: splitList(cfg.httpAllow), Deny: splitList(cfg.httpDeny)},
			DashboardURL: cfg.dashboardURL},
		Documents: serverless.NewCompiler(serverless.Options{Secrets: secrets, Runtime: serverless.RuntimeOptions{Version: version}, HTTP: serverless.HTTPOptions{Allow: splitList(cfg.httpAllow),
			Deny: splitList(cfg.httpDeny), Timeout: cfg.httpTimeout, MaxResponseBytes: cfg.httpMaxBytes}, Expressions: cfg.exprs.options(),
			Run: cfg.run.options(), GRPC: serverless.GRPCOptions{ProtoDir: cfg.grpcProtoDir}, AsyncAPI: cfg.async.options()}),
	})
	if err != nil {
		return err
	}
	if cfg.definitions != "" {
		files, err := definitionFiles(cfg.definitions)
		if err != nil {
			return err
		}
		if err := deployFiles(ctx, node, files, io.Discard); err != nil {
			return err
		}
		log.Info("definitions deployed", "dir", cfg.definitions, "files", len(files))
	}
	if cfg.demo {
		if err := demo.Register(ctx, node); err != nil {
			return err
		}
	}

	// runCtx ends after a signal or when a part of the node fails; either way the node shuts down.
	runCtx, stopRun := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopRun(nil)
	nodeDone := make(chan struct{})
	go func() {
		defer close(nodeDone)
		if err := node.Run(runCtx); err != nil {
			stopRun(err)
		}
	}()
	defer func() { stopRun(nil); <-nodeDone }()

	health := &healthChecks{store: store}
	var srv *http.Server
	if ln != nil {
		srv = &http.Server{
			Handler: newHTTPHandler(cfg, node, store, health, metricsHandler(store, node.MetricsCollectors()...), log, runCtx.Done()),
			// No WriteTimeout: it would cut websocket and SSE streams. ReadTimeout bounds reading
			// a request (header and body); streams clear it once their request is read.
			ReadHeaderTimeout: cfg.limits.readHeaderTimeout,
			ReadTimeout:       cfg.limits.readTimeout,
			IdleTimeout:       cfg.limits.idleTimeout,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		}
		go func() {
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				stopRun(fmt.Errorf("HTTP server: %w", err))
			}
		}()
		log.Info("http server listening", "addr", ln.Addr().String(), "graphiql", "http://"+ln.Addr().String()+"/")
	}
	log.Info("cairn started", "version", version, "database", store.URL(), "api", !cfg.noAPI,
		"workers", !cfg.noWorkers, "groups", cfg.groupList(), "demo", cfg.demo, "gogc", gcPercent, "memory_limit_bytes", memLimit)

	var cause error
	select {
	case <-ctx.Done():
		log.Info("shutting down", "drain_timeout", cfg.drainTimeout)
	case <-runCtx.Done():
		cause = context.Cause(runCtx)
		log.Error("shutting down after a failure", "error", cause)
	}
	stopSignals() // a second SIGINT or SIGTERM now kills the process at once
	stopRun(nil)

	// Stop taking requests and let the node drain at the same time; runCtx is already done, so the
	// pools have stopped claiming and long polls answer.
	health.stopping.Store(true)
	if srv != nil {
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.drainTimeout)
		if err := srv.Shutdown(shutdownCtx); err != nil {
			log.Warn("HTTP requests still running after the drain timeout; closing them", "error", err)
			_ = srv.Close()
		}
		cancel()
	}
	<-nodeDone
	storeClosed = true
	if err := store.Close(); err != nil {
		log.Warn("error closing the database", "error", err)
	}
	if cause != nil {
		return cause
	}
	log.Info("cairn stopped")
	return nil
}

// prepareSchema migrates the database, or with --no-migrate checks that it is migrated. Either way
// a database migrated by a newer cairn stops the node.
func prepareSchema(ctx context.Context, store *persistence.Store, noMigrate bool, log *slog.Logger) error {
	if noMigrate {
		if err := store.CheckSchema(ctx); err != nil {
			if errors.Is(err, persistence.ErrNotMigrated) {
				return fmt.Errorf("%w (run cairn migrate up, or start without --no-migrate)", err)
			}
			return err
		}
		return nil
	}
	applied, err := store.Migrate(ctx)
	if err != nil {
		return err
	}
	if len(applied) > 0 {
		log.Info("migrated the database", "database", store.URL(), "applied", applied)
	}
	return nil
}
