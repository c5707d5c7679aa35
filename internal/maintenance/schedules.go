package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cairnflow/cairn/persistence"
)

// SchedulerConfig configures a Scheduler.
type SchedulerConfig struct {
	// Interval is how often it looks for due schedules.
	Interval time.Duration
	// Fire starts the runs of every schedule due at now and returns how many it started.
	Fire func(ctx context.Context, now time.Time) (int, error)
	// Logger receives the failures.
	Logger *slog.Logger
}

func (c SchedulerConfig) validate() error {
	if c.Fire == nil || c.Logger == nil {
		return errors.New("the scheduler needs a Fire function and a logger")
	}
	return positive("the schedule interval", c.Interval)
}

// Scheduler fires due schedules, once per node and interval. Every node runs it: two nodes may see
// the same fire, and the database keeps it to one run (the run's idempotency key is unique, and the
// schedule's next fire time moves on in a conditional update).
type Scheduler struct {
	cfg SchedulerConfig
	run runner
}

// NewScheduler checks the config and returns the service.
func NewScheduler(cfg SchedulerConfig) (*Scheduler, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("error configuring the scheduler: %w", err)
	}
	return &Scheduler{cfg: cfg, run: runner{name: "scheduler"}}, nil
}

// Start implements Service.
func (s *Scheduler) Start(ctx context.Context) error {
	return s.run.start(ctx, func(ctx context.Context) {
		every(ctx, s.cfg.Interval, func(ctx context.Context) {
			if _, err := s.cfg.Fire(ctx, persistence.Now()); err != nil && ctx.Err() == nil {
				s.cfg.Logger.Warn("firing schedules failed", "error", err)
			}
		})
	})
}

// Stop implements Service.
func (s *Scheduler) Stop() { s.run.stop() }
