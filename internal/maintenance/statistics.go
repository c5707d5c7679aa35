package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// StatisticsInterval is how often a node looks for tables whose planner statistics went stale:
// a table refilled after it was analyzed empty runs with plans for an empty table until then.
const StatisticsInterval = time.Second

// StatisticsConfig configures a Statistics service.
type StatisticsConfig struct {
	// Interval is how often it looks.
	Interval time.Duration
	// Refresh analyzes the tables whose statistics are stale and returns their names
	// (persistence.Store.RefreshStaleStatistics).
	Refresh func(ctx context.Context) ([]string, error)
	// Logger receives what it analyzed and its failures.
	Logger *slog.Logger
}

// Statistics keeps the planner's statistics of cairn's tables from lagging far behind them, once
// per node and interval. Every node runs it: its check reads a few catalog rows and statistics
// counters, and an analysis skips a table another node (or autovacuum) is analyzing at that
// moment.
type Statistics struct {
	cfg StatisticsConfig
	run runner
}

// NewStatistics checks the config and returns the service.
func NewStatistics(cfg StatisticsConfig) (*Statistics, error) {
	if cfg.Refresh == nil || cfg.Logger == nil {
		return nil, errors.New("error configuring the statistics service: it needs a Refresh function and a logger")
	}
	if err := positive("the statistics interval", cfg.Interval); err != nil {
		return nil, fmt.Errorf("error configuring the statistics service: %w", err)
	}
	return &Statistics{cfg: cfg, run: runner{name: "statistics"}}, nil
}

// Start implements Service.
func (s *Statistics) Start(ctx context.Context) error {
	return s.run.start(ctx, func(ctx context.Context) {
		every(ctx, s.cfg.Interval, func(ctx context.Context) {
			tables, err := s.cfg.Refresh(ctx)
			switch {
			case err != nil && ctx.Err() == nil:
				s.cfg.Logger.Warn("refreshing stale statistics failed", "error", err)
			case len(tables) > 0:
				s.cfg.Logger.Info("analyzed tables whose statistics were stale", "tables", tables)
			}
		})
	})
}

// Stop implements Service.
func (s *Statistics) Stop() { s.run.stop() }
