package pool

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
)

// FlowCollector exposes flow control to Prometheus, read from the database at each scrape, per
// flow-controlled type (never per key, so the series stay few): the workflows holding a
// concurrency slot, the due workflows waiting for one, and the rate keys with no slot free now.
type FlowCollector struct {
	engine *engine.Engine

	running, waiting, throttled *prometheus.Desc
}

var _ prometheus.Collector = (*FlowCollector)(nil)

// NewFlowCollector returns a Prometheus collector for an engine's flow controls.
func NewFlowCollector(e *engine.Engine) *FlowCollector {
	labels := []string{"type"}
	return &FlowCollector{
		engine:  e,
		running: prometheus.NewDesc("cairn_flow_running", "Workflows holding a concurrency slot of their type's flow control.", labels, nil),
		waiting: prometheus.NewDesc("cairn_flow_waiting", "Due workflows waiting for a concurrency slot of their type's flow control.", labels, nil),
		throttled: prometheus.NewDesc("cairn_flow_throttled_keys",
			"Rate keys of a type whose next step start must wait for the rate limit (no slot free now).", labels, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *FlowCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.running, c.waiting, c.throttled} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *FlowCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	flows, err := c.engine.FlowControlList(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.waiting, err)
		return
	}
	for _, f := range flows {
		if f.Flow.Concurrency != nil {
			counts, err := c.engine.FlowKeyCounts(ctx, f)
			if err != nil {
				ch <- prometheus.NewInvalidMetric(c.waiting, err)
				return
			}
			running, waiting := 0, 0
			for _, k := range counts {
				running += k.Running
				waiting += k.Waiting
			}
			ch <- prometheus.MustNewConstMetric(c.running, prometheus.GaugeValue, float64(running), f.Type)
			ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(waiting), f.Type)
		}
		if r := f.Flow.RateLimit; r != nil {
			next, err := c.engine.Store().FlowRateNext(ctx, f.Type, r.Limit, r.Period, persistence.Now())
			if err != nil {
				ch <- prometheus.NewInvalidMetric(c.throttled, err)
				return
			}
			ch <- prometheus.MustNewConstMetric(c.throttled, prometheus.GaugeValue, float64(len(next)), f.Type)
		}
	}
}
