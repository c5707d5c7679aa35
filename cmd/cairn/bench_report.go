package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// percentileMs is the nearest-rank percentile of sorted durations, in milliseconds.
func percentileMs(sorted []time.Duration, p int) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	i = min(max(i-1, 0), len(sorted)-1)
	return float64(sorted[i].Microseconds()) / 1000
}

// printBenchReport prints the figures as a table, or with asJSON as one JSON object.
func printBenchReport(w io.Writer, r *benchReport, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		return enc.Encode(r)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "database\t%s\n", r.Database)
	fmt.Fprintf(tw, "definition\t%s (%s mode, %d node(s) x %d workers)\n", r.Definition, r.Mode, r.Nodes, r.Workers)
	if r.Preloaded > 0 {
		fmt.Fprintf(tw, "preloaded\t%d ended workflows with their history in %.2fs (kept)\n", r.Preloaded, r.PreloadSeconds)
	}
	if r.InsertSeconds > 0 {
		fmt.Fprintf(tw, "inserted\t%d workflows in %.2fs (before the timer)\n", r.Count, r.InsertSeconds)
	}
	if r.StartsPerSec > 0 {
		fmt.Fprintf(tw, "started\t%d workflows, %.0f/s\n", r.Count, r.StartsPerSec)
	}
	fmt.Fprintf(tw, "finished\t%d of %d in %.2fs\n", r.Finished, r.Count, r.Seconds)
	fmt.Fprintf(tw, "workflows/s\t%.0f\n", r.WorkflowsPerSec)
	fmt.Fprintf(tw, "steps/s\t%.0f (%d steps)\n", r.StepsPerSec, r.Steps)
	fmt.Fprintf(tw, "start to first step\tp50 %.1fms  p90 %.1fms  p99 %.1fms\n", r.FirstStepP50ms, r.FirstStepP90ms, r.FirstStepP99ms)
	fmt.Fprintf(tw, "start to finish\tp50 %.1fms  p99 %.1fms\n", r.FinishP50ms, r.FinishP99ms)
	if r.FlowKeys > 0 || r.FlowLimit > 0 || r.RateLimit != "" {
		fmt.Fprintf(tw, "flow control\t%d keys, concurrency limit %d per key, rate limit %q\n", r.FlowKeys, r.FlowLimit, r.RateLimit)
	}
	if r.Probes > 0 {
		fmt.Fprintf(tw, "probes (keys of their own)\t%d, start to first step p50 %.1fms  p99 %.1fms\n", r.Probes, r.ProbeP50ms, r.ProbeP99ms)
	}
	return tw.Flush()
}
