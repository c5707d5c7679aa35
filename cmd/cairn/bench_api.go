package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/cairnflow/cairn/remoteworker"
)

// apiBenchConfig is the configuration of cairn bench --api: a load of startWorkflow requests sent
// to a running node over HTTP, one workflow per request, as services start them.
type apiBenchConfig struct {
	url        string
	token      string
	definition string
	input      string
	count      int
	clients    int
	timeout    time.Duration
	json       bool
}

// apiBenchReport is what cairn bench --api measures.
type apiBenchReport struct {
	URL        string `json:"url"`
	Definition string `json:"definition"`
	Clients    int    `json:"clients"`
	Count      int    `json:"count"`
	// Started is how many starts the node acknowledged; Failed how many requests failed.
	Started int `json:"started"`
	Failed  int `json:"failed"`
	// StartSeconds is from the first request until the last acknowledgement.
	StartSeconds float64 `json:"start_seconds"`
	StartsPerSec float64 `json:"starts_per_sec"`
	StartP50Ms   float64 `json:"start_p50_ms"`
	StartP99Ms   float64 `json:"start_p99_ms"`
	// Finished is how many of the started workflows were FINISHED when the run ended, and
	// EndToEndSeconds from the first one's creation until the last one's end, as the node recorded
	// them (its clock: the times of one machine, not of the client and the node, and not the
	// client's checks, which ask about the workflows 500 at a time and sleep between rounds).
	// SeenSeconds is from the first request until the client had seen every one finished.
	Finished         int     `json:"finished"`
	EndToEndSeconds  float64 `json:"end_to_end_seconds"`
	WorkflowsPerSec  float64 `json:"workflows_per_sec"`
	SeenSeconds      float64 `json:"seen_seconds"`
	FirstError       string  `json:"first_error,omitempty"`
	BusinessKeyOfRun string  `json:"business_key"`
}

const apiBenchStart = `mutation($input: StartWorkflowInput!) { startWorkflow(input: $input) { workflow { id } } }`

const apiBenchStats = `query($filter: WorkflowFilter) { workflowStats(filter: $filter) { total } }`

// apiBenchFinished lists which of a page of workflows (by ID, so the answer is exact) have finished.
const apiBenchFinished = `query($filter: WorkflowFilter, $first: Int) { workflows(filter: $filter, first: $first) { nodes { id created finished } } }`

// apiBenchPage is how many workflow IDs one finished-check asks about (the API's largest page).
const apiBenchPage = 500

// runAPIBench starts cfg.count workflows through the API from cfg.clients concurrent clients, then
// waits for them to finish, and reports starts/s, start latencies and end-to-end workflows/s.
func runAPIBench(ctx context.Context, env *environment, cfg *apiBenchConfig) error {
	ctx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = cfg.clients
	client := remoteworker.New(cfg.url, remoteworker.Options{Token: cfg.token, HTTPClient: &http.Client{Transport: transport, Timeout: time.Minute}})

	// Every workflow of the run carries one business key, to find them in the database afterwards.
	key := make([]byte, 6)
	_, _ = rand.Read(key)
	runKey := "bench-" + hex.EncodeToString(key)
	var input json.RawMessage = []byte(cfg.input)
	var probe struct{ WorkflowStats json.RawMessage }
	if err := client.Do(ctx, apiBenchStats, map[string]any{"filter": map[string]any{"businessKey": runKey}}, &probe); err != nil {
		return fmt.Errorf("error reaching %s: %w", cfg.url, err)
	}

	var (
		next      atomic.Int64
		failed    atomic.Int64
		firstErr  atomic.Value
		mu        sync.Mutex
		latencies = make([]time.Duration, 0, cfg.count)
		started   = make([]string, 0, cfg.count)
		lastAck   time.Time
	)
	began := time.Now()
	var wg sync.WaitGroup
	for range cfg.clients {
		wg.Go(func() {
			for next.Add(1) <= int64(cfg.count) && ctx.Err() == nil {
				sent := time.Now()
				var out struct {
					StartWorkflow struct{ Workflow struct{ ID string } }
				}
				err := client.Do(ctx, apiBenchStart, map[string]any{"input": map[string]any{
					"type": cfg.definition, "input": input, "businessKey": runKey}}, &out)
				took := time.Since(sent)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				mu.Lock()
				latencies = append(latencies, took)
				started = append(started, out.StartWorkflow.Workflow.ID)
				lastAck = time.Now()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	r := &apiBenchReport{URL: cfg.url, Definition: cfg.definition, Clients: cfg.clients, Count: cfg.count,
		Started: len(latencies), Failed: int(failed.Load()), BusinessKeyOfRun: runKey}
	if e, ok := firstErr.Load().(string); ok {
		r.FirstError = e
	}
	if r.Started > 0 {
		r.StartSeconds = lastAck.Sub(began).Seconds()
		r.StartsPerSec = float64(r.Started) / r.StartSeconds
		slices.Sort(latencies)
		r.StartP50Ms = float64(latencies[len(latencies)/2].Microseconds()) / 1000
		r.StartP99Ms = float64(latencies[min(len(latencies)-1, len(latencies)*99/100)].Microseconds()) / 1000
	}

	// Wait for the started workflows to finish, asking about the unfinished ones by ID: counts of
	// large filtered sets may be the planner's estimates, lookups by ID are exact.
	pending := started
	deadline := time.Now().Add(cfg.timeout)
	var firstCreated, lastFinished time.Time
	for ctx.Err() == nil {
		var still []string
		for i := 0; i < len(pending); i += apiBenchPage {
			page := pending[i:min(len(pending), i+apiBenchPage)]
			var got struct {
				Workflows struct {
					Nodes []struct {
						ID       string
						Created  time.Time
						Finished time.Time
					}
				}
			}
			if err := client.Do(ctx, apiBenchFinished, map[string]any{"first": len(page),
				"filter": map[string]any{"ids": page, "statuses": []string{"FINISHED"}}}, &got); err != nil {
				return fmt.Errorf("error reading which workflows finished: %w", err)
			}
			done := make(map[string]bool, len(got.Workflows.Nodes))
			for _, n := range got.Workflows.Nodes {
				done[n.ID] = true
				if firstCreated.IsZero() || n.Created.Before(firstCreated) {
					firstCreated = n.Created
				}
				if n.Finished.After(lastFinished) {
					lastFinished = n.Finished
				}
			}
			for _, id := range page {
				if !done[id] {
					still = append(still, id)
				}
			}
		}
		pending = still
		r.Finished = len(started) - len(pending)
		r.SeenSeconds = time.Since(began).Seconds()
		if r.Finished > 0 {
			r.EndToEndSeconds = lastFinished.Sub(firstCreated).Seconds()
		}
		if len(pending) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r.EndToEndSeconds > 0 {
		r.WorkflowsPerSec = float64(r.Finished) / r.EndToEndSeconds
	}
	if err := printAPIBenchReport(env.stdout, r, cfg.json); err != nil {
		return err
	}
	switch {
	case r.Started == 0:
		return fmt.Errorf("no start succeeded: %s", r.FirstError)
	case r.Finished < r.Started:
		return fmt.Errorf("%d of %d started workflows did not finish within --timeout %s", r.Started-r.Finished, r.Started, cfg.timeout)
	}
	return nil
}

func printAPIBenchReport(w io.Writer, r *apiBenchReport, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "api\t%s (%d clients, one workflow per request)\n", r.URL, r.Clients)
	fmt.Fprintf(tw, "definition\t%s\n", r.Definition)
	fmt.Fprintf(tw, "started\t%d of %d in %.2fs, %.0f/s (%d failed)\n", r.Started, r.Count, r.StartSeconds, r.StartsPerSec, r.Failed)
	fmt.Fprintf(tw, "start latency\tp50 %.1f ms, p99 %.1f ms\n", r.StartP50Ms, r.StartP99Ms)
	fmt.Fprintf(tw, "finished\t%d in %.2fs from the first one's creation to the last one's end (the node's clock), %.0f workflows/s end to end\n",
		r.Finished, r.EndToEndSeconds, r.WorkflowsPerSec)
	fmt.Fprintf(tw, "seen\tevery one finished %.2fs after the first request (the client's checks)\n", r.SeenSeconds)
	if r.FirstError != "" {
		fmt.Fprintf(tw, "first error\t%s\n", r.FirstError)
	}
	return tw.Flush()
}
