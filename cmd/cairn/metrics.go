package main

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/internal/pool"
)

// metricsHandler serves /metrics in the Prometheus format: the worker pools' counters, the
// database connection pool, the Go runtime and the process.
func metricsHandler(store *persistence.Store, pools []*pool.Worker, extra ...prometheus.Collector) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(extra...)
	reg.MustRegister(
		pool.NewCollector(pools...),
		collectors.NewDBStatsCollector(store.DB().DB, "cairn"),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}
