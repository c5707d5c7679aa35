package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// benchFlow is cairn bench's flow control: the limits it sets on --definition for the run (cleared
// afterwards), the keys its workflows get, and the probes it starts while the workers drain.
type benchFlow struct {
	keys      int    // --flow-keys: workflow i gets concurrency key k<i mod keys> (0: none)
	limit     int    // --flow-limit: slots per key (0: no concurrency limit)
	scope     string // --flow-scope
	rateLimit string // --rate-limit: N/PERIOD
	probes    int    // --probes: workflows of fresh keys started while the workers drain

	fc      *workflow.FlowControl // what the flags set (nil: nothing)
	mu      sync.Mutex
	started int
	probed  []int64
}

func (f *benchFlow) flags(fs *flagSet) {
	fs.IntVar(&f.keys, "flow-keys", 0, "give the workflows `N` concurrency keys in turn (k0, k1, ...), for --flow-limit")
	fs.IntVar(&f.limit, "flow-limit", 0, "set a concurrency limit of `N` workflows per key on --definition for the run (cleared afterwards)")
	fs.StringVar(&f.scope, "flow-scope", "WORKFLOW", "the concurrency limit's `scope`: WORKFLOW or STEP")
	fs.StringVar(&f.rateLimit, "rate-limit", "", "set a rate limit of `N/PERIOD` step starts (e.g. 1000/1s) on --definition for the run")
	fs.IntVar(&f.probes, "probes", 0, "while the workers drain, start `N` workflows one every 10ms, each of a key of its own, and report their start to first step apart (fairness)")
}

// check reads the flags into the flow control to set.
func (f *benchFlow) check() error {
	switch {
	case f.keys < 0 || f.limit < 0 || f.probes < 0:
		return usagef("--flow-keys, --flow-limit and --probes must not be negative")
	case f.scope != string(workflow.ScopeWorkflow) && f.scope != string(workflow.ScopeStep):
		return usagef("--flow-scope must be WORKFLOW or STEP, not %q", f.scope)
	}
	fc := &workflow.FlowControl{}
	if f.limit > 0 {
		fc.Concurrency = &workflow.Concurrency{Limit: f.limit, Scope: workflow.ConcurrencyScope(f.scope)}
	}
	if f.rateLimit != "" {
		n, period, ok := strings.Cut(f.rateLimit, "/")
		limit, err := strconv.Atoi(n)
		if !ok || err != nil || limit < 1 {
			return usagef("--rate-limit must be N/PERIOD with N at least 1 (e.g. 1000/1s), not %q", f.rateLimit)
		}
		d, err := workflow.ParsePeriod("rate-limit", period)
		if err != nil {
			return usagef("--rate-limit: %v", err)
		}
		fc.RateLimit = &workflow.RateLimit{Limit: limit, Period: d}
	}
	if fc.Concurrency != nil || fc.RateLimit != nil {
		f.fc = fc
	}
	return nil
}

// set sets the flow control on the type; the function it returns clears it.
func (f *benchFlow) set(ctx context.Context, e *engine.Engine, typ string) (func(), error) {
	if f.fc == nil {
		return func() {}, nil
	}
	if _, err := e.SetFlowControl(ctx, typ, *f.fc, "cli"); err != nil {
		return nil, fmt.Errorf("error setting the flow control: %w", err)
	}
	return func() {
		clearCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, _ = e.ClearFlowControl(clearCtx, typ, "cli")
	}, nil
}

// key gives the next started workflow its concurrency key.
func (f *benchFlow) key(p *workflow.StartParams) {
	if f.keys == 0 {
		return
	}
	f.mu.Lock()
	p.ConcurrencyKey = "k" + strconv.Itoa(f.started%f.keys)
	f.started++
	f.mu.Unlock()
}

// probe starts --probes workflows, one every 10ms, each under a key no other workflow has.
func (b *bench) probe(ctx context.Context, e *engine.Engine) error {
	f := &b.cfg.flow
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for i := range f.probes {
		res, err := e.Start(ctx, workflow.StartParams{Type: b.cfg.definition, Input: json.RawMessage(b.cfg.input),
			ConcurrencyKey: "probe-" + strconv.Itoa(i)})
		if err != nil {
			return fmt.Errorf("error starting a probe: %w", err)
		}
		b.mu.Lock()
		b.ids = append(b.ids, res.Workflow.ID)
		b.mu.Unlock()
		f.mu.Lock()
		f.probed = append(f.probed, res.Workflow.ID)
		f.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// measureProbes fills the report's probe figures: start to first step of the probes.
func (b *bench) measureProbes(ctx context.Context, r *benchReport) error {
	f := &b.cfg.flow
	f.mu.Lock()
	ids := slices.Clone(f.probed)
	f.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	wfs, err := b.store.WorkflowGetMany(ctx, ids)
	if err != nil {
		return err
	}
	tis, err := b.store.TaskInstanceList(ctx, persistence.TaskInstanceListParams{WorkflowIDs: ids})
	if err != nil {
		return err
	}
	first := map[int64]time.Time{}
	for _, ti := range tis {
		if t, ok := first[ti.WorkflowID]; !ok || ti.Started.Before(t) {
			first[ti.WorkflowID] = ti.Started
		}
	}
	var d []time.Duration
	for _, w := range wfs {
		if t, ok := first[w.ID]; ok {
			d = append(d, t.Sub(w.Created))
		}
	}
	slices.Sort(d)
	r.Probes, r.ProbeP50ms, r.ProbeP99ms = len(d), percentileMs(d, 50), percentileMs(d, 99)
	return nil
}
