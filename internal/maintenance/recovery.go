package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// RecoveryConfig configures a Recovery.
type RecoveryConfig struct {
	// Interval is how often it looks for dead executors.
	Interval time.Duration
	// Recover declares dead the executors whose heartbeat expired, takes over their workflows and
	// returns how many it took over.
	Recover func(ctx context.Context) (int, error)
	// Logger receives the failures.
	Logger *slog.Logger
}

func (c RecoveryConfig) validate() error {
	if c.Recover == nil || c.Logger == nil {
		return errors.New("recovery needs a Recover function and a logger")
	}
	return positive("the recovery interval", c.Interval)
}

// Recovery takes over the work of dead executors, once per node and interval. Every node runs it:
// declaring an executor dead deletes its row in a conditional statement, and each workflow is taken
// over only where the dead executor still holds it at its version (a conditional update), so two
// nodes recovering at once never take over the same workflow twice.
type Recovery struct {
	cfg RecoveryConfig
	run runner
}

// NewRecovery checks the config and returns the service.
func NewRecovery(cfg RecoveryConfig) (*Recovery, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("error configuring recovery: %w", err)
	}
	return &Recovery{cfg: cfg, run: runner{name: "recovery"}}, nil
}

// Start implements Service.
func (r *Recovery) Start(ctx context.Context) error {
	return r.run.start(ctx, func(ctx context.Context) {
		every(ctx, r.cfg.Interval, func(ctx context.Context) {
			if _, err := r.cfg.Recover(ctx); err != nil && ctx.Err() == nil {
				r.cfg.Logger.Warn("recovery failed", "error", err)
			}
		})
	})
}

// Stop implements Service.
func (r *Recovery) Stop() { r.run.stop() }
