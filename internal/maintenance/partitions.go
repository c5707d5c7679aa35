package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cairnflow/cairn/persistence"
)

// PartitionsConfig configures a HistoryPartitions service.
type PartitionsConfig struct {
	// Store holds the partitioned history tables.
	Store *persistence.Store
	// Width is the partitions' width; Retention must not be shorter.
	Width persistence.PartitionWidth
	// Ahead is how many partitions past the current one are kept ready.
	Ahead int
	// Retention, when positive: partitions of history wholly older than this are dropped and the
	// older rows of the edge partition deleted. EventRetention does the same for change events'
	// partitions (their edge is the event trimmer's).
	Retention, EventRetention time.Duration
	// Interval is how often it runs (and once at the start).
	Interval time.Duration
	// Logger receives what it made and dropped, and the failures.
	Logger *slog.Logger
}

// HistoryPartitions keeps the partitions of the history tables: it makes them ahead of time and
// drops those that only hold expired rows. Every node with pools runs it; the store serializes
// two nodes' rounds with a lock.
type HistoryPartitions struct {
	cfg PartitionsConfig
	run runner
}

// NewHistoryPartitions checks the config and returns the service.
func NewHistoryPartitions(cfg PartitionsConfig) (*HistoryPartitions, error) {
	if cfg.Store == nil || cfg.Logger == nil {
		return nil, errors.New("error configuring the history partitions: they need a store and a logger")
	}
	if _, err := persistence.ParsePartitionWidth(string(cfg.Width)); err != nil {
		return nil, fmt.Errorf("error configuring the history partitions: %w", err)
	}
	if err := cfg.Width.CheckRetention(cfg.Retention); err != nil {
		return nil, fmt.Errorf("error configuring the history partitions: %w", err)
	}
	if err := positive("the partition interval", cfg.Interval); err != nil {
		return nil, fmt.Errorf("error configuring the history partitions: %w", err)
	}
	if cfg.Ahead < 1 {
		return nil, fmt.Errorf("error configuring the history partitions: at least one partition must be made ahead, not %d", cfg.Ahead)
	}
	return &HistoryPartitions{cfg: cfg, run: runner{name: "history partitions"}}, nil
}

// Start implements Service.
func (h *HistoryPartitions) Start(ctx context.Context) error {
	return h.run.start(ctx, func(ctx context.Context) {
		h.round(ctx)
		every(ctx, h.cfg.Interval, h.round)
	})
}

// Stop implements Service.
func (h *HistoryPartitions) Stop() { h.run.stop() }

func (h *HistoryPartitions) round(ctx context.Context) {
	now := persistence.Now()
	made, err := h.cfg.Store.HistoryPartitionsPrepare(ctx, now, h.cfg.Ahead)
	if err != nil {
		if ctx.Err() == nil {
			h.cfg.Logger.Warn("making history partitions failed", "error", err)
		}
		return
	}
	if len(made) > 0 {
		h.cfg.Logger.Info("made history partitions", "partitions", made)
	}
	p := persistence.HistoryExpireParams{EdgeLimit: 5000}
	if h.cfg.Retention > 0 {
		p.Before = now.Add(-h.cfg.Retention)
	}
	if h.cfg.EventRetention > 0 {
		p.EventsBefore = now.Add(-h.cfg.EventRetention)
	}
	if p.Before.IsZero() && p.EventsBefore.IsZero() {
		return
	}
	began := time.Now()
	res, err := h.cfg.Store.HistoryPartitionsExpire(ctx, p)
	if err != nil {
		if ctx.Err() == nil {
			h.cfg.Logger.Warn("expiring history partitions failed", "error", err)
		}
		return
	}
	if len(res.Dropped) > 0 || res.Deleted > 0 {
		h.cfg.Logger.Info("expired history", "dropped_partitions", res.Dropped, "deleted_rows", res.Deleted,
			"took", time.Since(began).Round(time.Millisecond))
	}
}

// PartitionsAhead is how many partitions of a width a node keeps ready: three days, or two weeks.
func PartitionsAhead(w persistence.PartitionWidth) int {
	if w == persistence.PartitionWeek {
		return 2
	}
	return 3
}
