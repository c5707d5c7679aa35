package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// LeaseSweeperConfig configures a LeaseSweeper.
type LeaseSweeperConfig struct {
	// Interval is how often it ends leases that ran out.
	Interval time.Duration
	// Expire ends the remote tasks' leases that ran out: a task with attempts left is offered
	// again, the others fail their step. It returns how many leases it ended.
	Expire func(ctx context.Context) (int, error)
	// CancelEnded cancels the remote tasks of workflows that ended or were cancelled meanwhile.
	CancelEnded func(ctx context.Context) (int, error)
	// CancelEvery runs CancelEnded on every CancelEvery-th sweep (a rarer, longer statement).
	CancelEvery int
	// Logger receives the failures.
	Logger *slog.Logger
}

func (c LeaseSweeperConfig) validate() error {
	if c.Expire == nil || c.CancelEnded == nil || c.Logger == nil {
		return errors.New("the lease sweeper needs Expire and CancelEnded functions and a logger")
	}
	if c.CancelEvery < 1 {
		return fmt.Errorf("CancelEvery must be at least 1, not %d", c.CancelEvery)
	}
	return positive("the lease sweep interval", c.Interval)
}

// LeaseSweeper ends the leases of remote tasks that ran out, so that a task whose worker is gone is
// offered again within about an interval. Every node runs it: they never end one lease twice (the
// rows are taken with SKIP LOCKED where the database has it, and each statement checks the deadline
// again).
type LeaseSweeper struct {
	cfg LeaseSweeperConfig
	run runner
}

// NewLeaseSweeper checks the config and returns the service.
func NewLeaseSweeper(cfg LeaseSweeperConfig) (*LeaseSweeper, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("error configuring the lease sweeper: %w", err)
	}
	return &LeaseSweeper{cfg: cfg, run: runner{name: "lease sweeper"}}, nil
}

// Start implements Service.
func (s *LeaseSweeper) Start(ctx context.Context) error {
	return s.run.start(ctx, func(ctx context.Context) {
		tick := 0
		every(ctx, s.cfg.Interval, func(ctx context.Context) {
			tick++
			if _, err := s.cfg.Expire(ctx); err != nil && ctx.Err() == nil {
				s.cfg.Logger.Warn("error ending expired leases of remote tasks", "error", err)
			}
			if tick%s.cfg.CancelEvery == 0 {
				if _, err := s.cfg.CancelEnded(ctx); err != nil && ctx.Err() == nil {
					s.cfg.Logger.Warn("error cancelling the remote tasks of ended workflows", "error", err)
				}
			}
		})
	})
}

// Stop implements Service.
func (s *LeaseSweeper) Stop() { s.run.stop() }
