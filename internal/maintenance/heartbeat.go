package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cairnflow/cairn/persistence"
)

// HeartbeatConfig configures a Heartbeat.
type HeartbeatConfig struct {
	// Store is where the executor row lives.
	Store *persistence.Store
	// ExecutorID returns the executor to keep alive (it changes when the executor registers again).
	ExecutorID func() int64
	// Interval is how often it heartbeats.
	Interval time.Duration
	// Expiry is how long after a heartbeat the executor counts as dead; it also bounds one heartbeat.
	Expiry time.Duration
	// DeclaredDead is called when the executor row is gone: another node declared it dead and took
	// its work over. It registers the executor again.
	DeclaredDead func(ctx context.Context)
	// Logger receives the failures.
	Logger *slog.Logger
}

func (c HeartbeatConfig) validate() error {
	if c.Store == nil || c.ExecutorID == nil || c.DeclaredDead == nil || c.Logger == nil {
		return errors.New("a heartbeat needs a store, an executor, a DeclaredDead callback and a logger")
	}
	if err := positive("the heartbeat interval", c.Interval); err != nil {
		return err
	}
	return positive("the executor expiry", c.Expiry)
}

// Heartbeat keeps one executor alive. It runs per executor (each worker pool is an executor with
// its own row, claims and fencing), on its own ticker and over the store's heartbeat connection,
// and does nothing else: neither a busy pool, nor slow maintenance, nor API reads holding the
// database's connections may delay it until the executor looks dead. It writes only its own row.
type Heartbeat struct {
	cfg HeartbeatConfig
	run runner
}

// NewHeartbeat checks the config and returns the service.
func NewHeartbeat(cfg HeartbeatConfig) (*Heartbeat, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("error configuring the heartbeat: %w", err)
	}
	return &Heartbeat{cfg: cfg, run: runner{name: "heartbeat"}}, nil
}

// Start implements Service.
func (h *Heartbeat) Start(ctx context.Context) error {
	return h.run.start(ctx, func(ctx context.Context) { every(ctx, h.cfg.Interval, h.beat) })
}

// Stop implements Service.
func (h *Heartbeat) Stop() { h.run.stop() }

func (h *Heartbeat) beat(ctx context.Context) {
	beatCtx, cancel := context.WithTimeout(ctx, h.cfg.Expiry)
	err := h.cfg.Store.ExecutorHeartbeat(beatCtx, h.cfg.ExecutorID(), h.cfg.Expiry)
	cancel()
	if errors.Is(err, persistence.ErrNotFound) {
		// Declared dead (paused, partitioned): the work was taken over and late completions are
		// fenced off. Carry on as a new executor.
		h.cfg.DeclaredDead(ctx)
	} else if err != nil && ctx.Err() == nil {
		h.cfg.Logger.Warn("heartbeat failed", "error", err)
	}
}
