package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// BulkRunnerConfig configures a BulkRunner.
type BulkRunnerConfig struct {
	// Interval is how often it looks for bulk operations to work on besides Wake's hints.
	Interval time.Duration
	// Run works through the operations waiting for a runner and returns how many targets it
	// processed (engine.Engine's RunBulk, with this node's owner name).
	Run func(ctx context.Context) (int, error)
	// Wake, when not nil, hints that this node started an operation.
	Wake <-chan struct{}
	// Logger receives the failures.
	Logger *slog.Logger
}

func (c BulkRunnerConfig) validate() error {
	if c.Run == nil || c.Logger == nil {
		return errors.New("the bulk runner needs a Run function and a logger")
	}
	return positive("the bulk runner's interval", c.Interval)
}

// BulkRunner advances bulk operations. Every node runs it: an operation is one runner's at a time
// by a lease on its row (a conditional update), renewed with each batch; each batch changes its
// workflows and marks their targets done in one transaction, so a runner that takes over the
// operation of a dead node (once its lease ran out) goes on from what that node did not commit.
type BulkRunner struct {
	cfg BulkRunnerConfig
	run runner
}

// NewBulkRunner checks the config and returns the service.
func NewBulkRunner(cfg BulkRunnerConfig) (*BulkRunner, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("error configuring the bulk runner: %w", err)
	}
	return &BulkRunner{cfg: cfg, run: runner{name: "bulk runner"}}, nil
}

// Start implements Service.
func (b *BulkRunner) Start(ctx context.Context) error {
	return b.run.start(ctx, func(ctx context.Context) {
		t := time.NewTicker(b.cfg.Interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-b.cfg.Wake:
			}
			if _, err := b.cfg.Run(ctx); err != nil && ctx.Err() == nil {
				b.cfg.Logger.Warn("running bulk operations failed", "error", err)
			}
		}
	})
}

// Stop implements Service.
func (b *BulkRunner) Stop() { b.run.stop() }
