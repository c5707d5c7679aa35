// Package cairn is the node: what the cairn binary runs and what a Go program embeds. New checks
// the options and builds the engine and one worker pool per executor group; Node.Run starts the
// pools and every node service once (heartbeats, recovery of dead executors' work, schedule
// firing, retention, event trimming, remote-task lease sweeping, the cancel listener and the
// wake-up relay) and returns when its context ends and the node has drained. The node offers the
// operations on workflows (Start, Signal, Retry, Cancel, Wait, Follow, Deploy, ...), whose
// parameter and result types are package workflow's, and its GraphQL API as an http.Handler.
//
//	node, err := cairn.New(store, cairn.Options{Groups: []string{"default"}})
//	if err != nil { ... }
//	node.Register(ctx, definition)
//	go node.Run(ctx) // until ctx ends, then drains
//	started, err := node.Start(ctx, workflow.StartParams{Type: "greeting"})
//	w, err := node.Wait(ctx, started.Workflow.ID)
package cairn

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// Options configures a Node. Zero values take the defaults named on each field.
type Options struct {
	// Logger receives the node's logs (slog.Default()).
	Logger *slog.Logger
	// Limits bound what one workflow may store and do (workflow.DefaultLimits for zero fields).
	Limits workflow.Limits
	// Groups are the executor groups whose workflows this node runs, one worker pool each
	// (workflow.DefaultGroup when empty).
	Groups []string
	// NoWorkers runs no worker pool: the node serves operations only. Without a pool it recovers
	// no dead executors' work, fires no schedules and applies no retention: other nodes do.
	NoWorkers bool
	// Concurrency is how many steps each pool runs at once (100).
	Concurrency int
	// PollInterval is each pool's fallback poll when no wake-up arrives (1s).
	PollInterval time.Duration
	// HeartbeatInterval is how often each executor heartbeats and the node looks for dead
	// executors' work and due schedules (2s).
	HeartbeatInterval time.Duration
	// Expiry is how long after its last heartbeat an executor counts as dead (10s).
	Expiry time.Duration
	// RecoveryInterval is how often the node looks for dead executors' work (1s, or
	// HeartbeatInterval when that is shorter).
	RecoveryInterval time.Duration
	// ExpiryOnly declares executors dead by their expiry alone. By default each executor on
	// PostgreSQL or MariaDB also holds a database session lock while it lives, so that a killed
	// node is declared dead as soon as its session ends; behind a pooler in transaction mode, where
	// a session lock outlives its client, set it (nothing breaks without it: a dead node's lock
	// then looks held, and its expiry declares it dead).
	ExpiryOnly bool
	// DrainTimeout is how long Run waits, once its context ended, for running steps before
	// releasing them (30s).
	DrainTimeout time.Duration
	// Retention, when positive, deletes workflow trees that ended longer ago than this, with their
	// history, about every 30s (more often for a retention under 5 minutes); 0 keeps everything.
	Retention time.Duration
	// EventRetention, when positive, deletes change events (what subscriptions replay from a
	// cursor) older than this, checked like Retention; 0 keeps them all.
	EventRetention time.Duration
	// BulkLease is how long a bulk operation stays this node's after each batch it commits: when
	// the node dies, another node carries the operation on once the lease has run out (Expiry).
	BulkLease time.Duration
	// HistoryPartition is the width (day or week) the history tables are partitioned by on
	// PostgreSQL (persistence.Store.PartitionHistory), or empty when they are not. With it, a node
	// with pools keeps partitions ready ahead of time and, under Retention and EventRetention,
	// drops the partitions that only hold expired history. Refused on SQLite and MariaDB, and with
	// a Retention shorter than a partition.
	HistoryPartition persistence.PartitionWidth
	// Host names this node on its executor rows (os.Hostname()).
	Host string
	// Alerts bounds the webhooks of alert rules (docs/alerts.md).
	Alerts AlertOptions
	// Documents compiles the documents Deploy takes (Serverless Workflow YAML or JSON); without it
	// the node deploys none, and runs only definitions registered in Go.
	Documents workflow.DocumentCompiler
}

// validate checks the options once and fills in the defaults.
func (o Options) validate() (Options, error) {
	var errs []error
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"PollInterval", o.PollInterval}, {"HeartbeatInterval", o.HeartbeatInterval}, {"Expiry", o.Expiry},
		{"RecoveryInterval", o.RecoveryInterval}, {"DrainTimeout", o.DrainTimeout}, {"Retention", o.Retention}, {"EventRetention", o.EventRetention}, {"BulkLease", o.BulkLease}} {
		if d.d < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative, not %s", d.name, d.d))
		}
	}
	if o.Concurrency < 0 {
		errs = append(errs, fmt.Errorf("concurrency must not be negative, not %d", o.Concurrency))
	}
	if o.HeartbeatInterval == 0 {
		o.HeartbeatInterval = 2 * time.Second
	}
	if o.Expiry == 0 {
		o.Expiry = 10 * time.Second
	}
	if o.BulkLease == 0 {
		o.BulkLease = o.Expiry
	}
	if o.RecoveryInterval == 0 {
		o.RecoveryInterval = min(time.Second, o.HeartbeatInterval)
	}
	if o.DrainTimeout == 0 {
		o.DrainTimeout = 30 * time.Second
	}
	if len(o.Groups) == 0 && !o.NoWorkers {
		o.Groups = []string{workflow.DefaultGroup}
	}
	seen := map[string]bool{}
	for _, g := range o.Groups {
		switch {
		case strings.TrimSpace(g) == "":
			errs = append(errs, errors.New("an executor group has no name"))
		case seen[g]:
			errs = append(errs, fmt.Errorf("executor group %q is named twice", g))
		}
		seen[g] = true
	}
	if o.HistoryPartition != "" {
		if _, err := persistence.ParsePartitionWidth(string(o.HistoryPartition)); err != nil {
			errs = append(errs, err)
		} else if err := o.HistoryPartition.CheckRetention(o.Retention); err != nil {
			errs = append(errs, err)
		}
	}
	if o.NoWorkers {
		o.Groups = nil
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Alerts = o.Alerts.withDefaults(o.Expiry)
	if err := errors.Join(errs...); err != nil {
		return o, fmt.Errorf("invalid node options: %w", err)
	}
	return o, nil
}
