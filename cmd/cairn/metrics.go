package main

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cairnflow/cairn/persistence"
)

// metricsHandler serves /metrics in the Prometheus format: the node's collectors (its pools and
// remote tasks), the database connection pool, the Go runtime and the process.
func metricsHandler(store *persistence.Store, node ...prometheus.Collector) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(node...)
	reg.MustRegister(
		collectors.NewDBStatsCollector(store.DB().DB, "cairn"),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}
