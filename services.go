package cairn

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"time"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/internal/maintenance"
	"github.com/cairnflow/cairn/persistence"
)

// leaseCancelEvery is how many lease sweeps pass between two cancellations of the remote tasks of
// ended workflows (a rarer, longer statement).
const leaseCancelEvery = 20

// buildServices makes the node services, each config checked once. Every node runs the wake-up
// relay, the cancel listener and the lease sweeper; a node with pools also recovers dead
// executors' work, fires schedules, runs bulk operations and applies the retention (a node without pools has no
// executor to record a recovery as, as before).
func (n *Node) buildServices() error {
	relay, err := maintenance.NewWakeRelay(n.notifier)
	if err != nil {
		return err
	}
	cancels, err := maintenance.NewCancelListener(n.engine.RunCancelListener)
	if err != nil {
		return err
	}
	leases, err := maintenance.NewLeaseSweeper(maintenance.LeaseSweeperConfig{
		Interval: engine.LeaseSweep,
		Expire:   n.engine.ExpireTaskLeases,
		CancelEnded: func(ctx context.Context) (int, error) {
			count, err := n.store.RemoteTaskCancelEnded(ctx, persistence.Now())
			return int(count), err
		},
		CancelEvery: leaseCancelEvery,
		Logger:      n.log,
	})
	if err != nil {
		return err
	}
	n.hints = []maintenance.Service{relay, cancels, leases}
	if len(n.pools) == 0 {
		return nil
	}

	recovery, err := maintenance.NewRecovery(maintenance.RecoveryConfig{Interval: n.opts.RecoveryInterval, Recover: n.recover, Logger: n.log})
	if err != nil {
		return err
	}
	schedules, err := maintenance.NewScheduler(maintenance.SchedulerConfig{Interval: n.opts.HeartbeatInterval, Fire: n.engine.FireSchedules, Logger: n.log})
	if err != nil {
		return err
	}
	owner := fmt.Sprintf("%s/%d/%s", n.opts.Host, os.Getpid(), rand.Text()[:10])
	bulk, err := maintenance.NewBulkRunner(maintenance.BulkRunnerConfig{Interval: n.opts.HeartbeatInterval, Wake: n.engine.BulkWake(), Logger: n.log,
		Run: func(ctx context.Context) (int, error) {
			return n.engine.RunBulk(ctx, engine.BulkRunOptions{Owner: owner, Lease: n.opts.BulkLease})
		}})
	if err != nil {
		return err
	}
	alerts, err := n.alertSender(owner)
	if err != nil {
		return err
	}
	stats, err := maintenance.NewStatistics(maintenance.StatisticsConfig{Interval: maintenance.StatisticsInterval,
		Refresh: n.store.RefreshStaleStatistics, Logger: n.log})
	if err != nil {
		return err
	}
	n.cluster = []maintenance.Service{recovery, schedules, bulk, alerts, stats}
	if r := n.opts.Retention; r > 0 {
		purge, err := maintenance.NewRetention(maintenance.RetentionConfig{Store: n.store, Retention: r,
			Interval: maintenance.RetentionInterval(r, n.opts.HeartbeatInterval), Logger: n.log})
		if err != nil {
			return err
		}
		n.cluster = append(n.cluster, purge)
	}
	if w := n.opts.HistoryPartition; w != "" {
		parts, err := maintenance.NewHistoryPartitions(maintenance.PartitionsConfig{Store: n.store, Width: w,
			Ahead: maintenance.PartitionsAhead(w), Retention: n.opts.Retention, EventRetention: n.opts.EventRetention,
			Interval: maintenance.RetentionInterval(max(n.opts.Retention, time.Hour), n.opts.HeartbeatInterval), Logger: n.log})
		if err != nil {
			return err
		}
		n.cluster = append(n.cluster, parts)
	}
	if r := n.opts.EventRetention; r > 0 {
		trim, err := maintenance.NewEventTrimmer(maintenance.RetentionConfig{Store: n.store, Retention: r,
			Interval: maintenance.RetentionInterval(r, n.opts.HeartbeatInterval), Logger: n.log})
		if err != nil {
			return err
		}
		n.cluster = append(n.cluster, trim)
	}
	return nil
}
