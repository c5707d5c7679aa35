package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cairnflow/cairn/persistence"
)

// RetentionConfig configures a Retention or an EventTrimmer.
type RetentionConfig struct {
	// Store is where the rows are deleted.
	Store *persistence.Store
	// Retention is how long rows are kept after they ended (workflows) or were written (events).
	Retention time.Duration
	// Interval is how often it deletes.
	Interval time.Duration
	// Logger receives what it deleted and the failures.
	Logger *slog.Logger
}

func (c RetentionConfig) validate() error {
	if c.Store == nil || c.Logger == nil {
		return errors.New("retention needs a store and a logger")
	}
	if err := positive("the retention", c.Retention); err != nil {
		return err
	}
	return positive("the retention interval", c.Interval)
}

// Retention deletes workflow trees that ended longer ago than the retention, with their history, a
// bounded amount per interval. Every node runs it: each delete is one transaction over rows that
// no node writes any more (ended trees with nothing running), and two nodes deleting the same
// tree delete it once.
type Retention struct {
	cfg RetentionConfig
	run runner
}

// NewRetention checks the config and returns the service.
func NewRetention(cfg RetentionConfig) (*Retention, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("error configuring the retention: %w", err)
	}
	return &Retention{cfg: cfg, run: runner{name: "retention"}}, nil
}

// Start implements Service.
func (r *Retention) Start(ctx context.Context) error {
	return r.run.start(ctx, func(ctx context.Context) { every(ctx, r.cfg.Interval, r.purge) })
}

// Stop implements Service.
func (r *Retention) Stop() { r.run.stop() }

func (r *Retention) purge(ctx context.Context) {
	before := persistence.Now().Add(-r.cfg.Retention)
	for range 10 {
		n, err := r.cfg.Store.WorkflowPurge(ctx, persistence.WorkflowPurgeParams{FinishedBefore: before, Limit: 500})
		if err != nil {
			if ctx.Err() == nil {
				r.cfg.Logger.Warn("purging ended workflows failed", "error", err)
			}
			return
		}
		if n > 0 {
			r.cfg.Logger.Info("purged ended workflows", "count", n, "ended_before", before)
		}
		if n < 500 {
			return
		}
	}
}

// EventTrimmer deletes the change events (what subscriptions replay from a cursor) older than the
// retention, oldest first, a bounded amount per interval. Every node runs it: a delete of old
// events is safe beside the same delete on another node.
type EventTrimmer struct {
	cfg RetentionConfig
	run runner
}

// NewEventTrimmer checks the config and returns the service.
func NewEventTrimmer(cfg RetentionConfig) (*EventTrimmer, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("error configuring the event trimming: %w", err)
	}
	return &EventTrimmer{cfg: cfg, run: runner{name: "event trimmer"}}, nil
}

// Start implements Service.
func (t *EventTrimmer) Start(ctx context.Context) error {
	return t.run.start(ctx, func(ctx context.Context) { every(ctx, t.cfg.Interval, t.trim) })
}

// Stop implements Service.
func (t *EventTrimmer) Stop() { t.run.stop() }

func (t *EventTrimmer) trim(ctx context.Context) {
	before := persistence.Now().Add(-t.cfg.Retention)
	for range 20 {
		n, err := t.cfg.Store.ChangeEventTrim(ctx, persistence.ChangeEventTrimParams{Before: before, Limit: 5000})
		if err != nil {
			if ctx.Err() == nil {
				t.cfg.Logger.Warn("trimming change events failed", "error", err)
			}
			return
		}
		if n < 5000 {
			return
		}
	}
}

// RetentionInterval is how often retention runs for a retention period: about every 30s, more
// often for a short retention, never more often than floor.
func RetentionInterval(retention, floor time.Duration) time.Duration {
	return max(floor, min(30*time.Second, retention/10))
}
