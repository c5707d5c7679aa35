package pool

import (
	"context"
	"time"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/prometheus/client_golang/prometheus"
)

// RemoteCollector exposes the remote task protocol to Prometheus: the tasks waiting for a worker
// per function (read from the database at each scrape), the leases this node found run out, how
// long polls' lease statements took, and how long tasks waited from their creation to their lease.
type RemoteCollector struct {
	engine *engine.Engine

	waiting, expiries, poll, wait *prometheus.Desc
}

var _ prometheus.Collector = (*RemoteCollector)(nil)

// NewRemoteCollector returns a Prometheus collector for an engine's remote tasks.
func NewRemoteCollector(e *engine.Engine) *RemoteCollector {
	return &RemoteCollector{
		engine:   e,
		waiting:  prometheus.NewDesc("cairn_remote_tasks_waiting", "Remote tasks waiting for a worker (PENDING), per function.", []string{"function"}, nil),
		expiries: prometheus.NewDesc("cairn_remote_lease_expiries_total", "Leases of remote tasks this node found run out (the task was offered again, or failed when no attempt was left).", nil, nil),
		poll:     prometheus.NewDesc("cairn_remote_poll_seconds", "How long the lease statement of a poll took on this node.", nil, nil),
		wait:     prometheus.NewDesc("cairn_remote_task_wait_seconds", "How long remote tasks leased on this node waited, from their creation to their lease.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *RemoteCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.waiting, c.expiries, c.poll, c.wait} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *RemoteCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.engine.RemoteStats()
	ch <- prometheus.MustNewConstMetric(c.expiries, prometheus.CounterValue, float64(s.LeaseExpiries.Load()))
	for desc, h := range map[*prometheus.Desc]*engine.Histogram{c.poll: s.PollSeconds, c.wait: s.WaitSeconds} {
		n, sum, buckets := h.Snapshot()
		ch <- prometheus.MustNewConstHistogram(desc, n, sum, buckets)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	waiting, err := c.engine.Store().RemoteTaskWaiting(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.waiting, err)
		return
	}
	for fn, n := range waiting {
		ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(n), fn)
	}
}
