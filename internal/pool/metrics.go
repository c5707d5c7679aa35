package pool

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Collector exposes worker pools' counters to Prometheus, labelled by executor group.
type Collector struct {
	pools []*Worker

	claimed, completed, ended, fenced, recovered, inFlight *prometheus.Desc
	flowThrottled, flowCancelled, claimedOnWake            *prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a Prometheus collector for the given pools.
func NewCollector(pools ...*Worker) *Collector {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("cairn_"+name, help, []string{"group"}, nil)
	}
	return &Collector{
		pools:     pools,
		claimed:   desc("workflows_claimed_total", "Workflows claimed by this node's worker pool."),
		completed: desc("steps_completed_total", "Steps whose outcome this node wrote (succeeded or failed attempts)."),
		ended:     desc("workflows_ended_total", "Workflows this node's steps brought to FINISHED or FAILED."),
		fenced:    desc("steps_fenced_total", "Step outcomes discarded because the workflow was taken from this node (recovered, cancelled, paused)."),
		recovered: desc("workflows_recovered_total", "Workflows this node took over from dead executors or released after losing track of them."),
		inFlight:  desc("steps_in_flight", "Workflows claimed by this node whose step has not been completed yet."),
		flowThrottled: desc("flow_throttled_total",
			"Due workflows this node's claims held back for a rate limit (counted once per claim that passed them over)."),
		flowCancelled: desc("flow_cancelled_total", "Workflows this node cancelled for a concurrency strategy (CANCEL_NEWEST, CANCEL_IN_PROGRESS)."),
		claimedOnWake: desc("workflows_claimed_on_wake_total",
			"Workflows this node claimed in the transaction of the remote result that woke them (counted in workflows_claimed_total too)."),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.claimed, c.completed, c.ended, c.fenced, c.recovered, c.inFlight, c.flowThrottled, c.flowCancelled, c.claimedOnWake} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, w := range c.pools {
		g := w.opts.Group
		s := w.Stats()
		ch <- prometheus.MustNewConstMetric(c.claimed, prometheus.CounterValue, float64(s.Claimed.Load()), g)
		ch <- prometheus.MustNewConstMetric(c.completed, prometheus.CounterValue, float64(s.Completed.Load()), g)
		ch <- prometheus.MustNewConstMetric(c.ended, prometheus.CounterValue, float64(s.Ended.Load()), g)
		ch <- prometheus.MustNewConstMetric(c.fenced, prometheus.CounterValue, float64(s.Fenced.Load()), g)
		ch <- prometheus.MustNewConstMetric(c.recovered, prometheus.CounterValue, float64(s.Recovered.Load()), g)
		ch <- prometheus.MustNewConstMetric(c.inFlight, prometheus.GaugeValue, float64(w.InFlight()), g)
		ch <- prometheus.MustNewConstMetric(c.flowThrottled, prometheus.CounterValue, float64(s.FlowThrottled.Load()), g)
		ch <- prometheus.MustNewConstMetric(c.flowCancelled, prometheus.CounterValue, float64(s.FlowCancelled.Load()), g)
		ch <- prometheus.MustNewConstMetric(c.claimedOnWake, prometheus.CounterValue, float64(s.ClaimedOnWake.Load()), g)
	}
}
