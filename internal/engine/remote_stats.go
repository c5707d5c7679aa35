package engine

import (
	"sync"
	"sync/atomic"
)

// RemoteStats counts what the remote task protocol did on this node, for metrics.
type RemoteStats struct {
	// LeaseExpiries counts the leases this node found run out.
	LeaseExpiries atomic.Int64
	// PollSeconds is how long the lease statement of a poll took (the database's share of a poll).
	PollSeconds *Histogram
	// WaitSeconds is how long leased tasks waited, from their creation to their lease.
	WaitSeconds *Histogram
}

// HistogramBuckets are the upper bounds, in seconds, of the remote protocol's histograms.
var HistogramBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Histogram counts observations into HistogramBuckets (cumulatively, as Prometheus reads them).
type Histogram struct {
	mu      sync.Mutex
	buckets []uint64
	count   uint64
	sum     float64
}

func newHistogram() *Histogram { return &Histogram{buckets: make([]uint64, len(HistogramBuckets))} }

func (h *Histogram) observe(v float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, b := range HistogramBuckets {
		if v <= b {
			h.buckets[i]++
		}
	}
	h.count++
	h.sum += v
}

// Snapshot returns the count, the sum and the cumulative count per bucket's upper bound.
func (h *Histogram) Snapshot() (count uint64, sum float64, buckets map[float64]uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	buckets = make(map[float64]uint64, len(HistogramBuckets))
	for i, b := range HistogramBuckets {
		buckets[b] = h.buckets[i]
	}
	return h.count, h.sum, buckets
}
