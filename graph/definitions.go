package graph

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cairnflow/cairn/graph/model"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// definitionSpec decodes the stored spec of a definition version.
func definitionSpec(d *persistence.Definition) (*workflow.Definition, error) {
	key := specKey{id: d.ID, checksum: d.Checksum}
	specCache.Lock()
	def, ok := specCache.m[key]
	specCache.Unlock()
	if ok {
		return def, nil
	}
	def, err := workflow.ParseSpec(d.Spec)
	if err != nil {
		return nil, err
	}
	specCache.Lock()
	if len(specCache.m) >= maxCachedSpecs {
		clear(specCache.m)
	}
	specCache.m[key] = def
	specCache.Unlock()
	return def, nil
}

// specCache keeps parsed definition documents: a stored version never changes, and a page of 100
// workflows of one type asks for its definition's states 100 times (parsing the document was a
// tenth of the page's CPU). Callers only read what it returns.
var specCache = struct {
	sync.Mutex
	m map[specKey]*workflow.Definition
}{m: map[specKey]*workflow.Definition{}}

type specKey struct {
	id       int64
	checksum string
}

// maxCachedSpecs bounds specCache; past it, the cache starts over.
const maxCachedSpecs = 1000

func millis(d time.Duration) int { return int(d / time.Millisecond) }

func retryPolicy(p workflow.RetryPolicy) *model.RetryPolicy {
	return &model.RetryPolicy{MaxAttempts: p.MaxAttempts, MinBackoffMs: millis(p.MinBackoff), MaxBackoffMs: millis(p.MaxBackoff), Jitter: p.Jitter}
}

// stateDefinitions lists a definition's states for the API.
func stateDefinitions(def *workflow.Definition) []*model.StateDefinition {
	out := make([]*model.StateDefinition, 0, len(def.States))
	for _, s := range def.States {
		sd := &model.StateDefinition{Name: s.Name, Kind: s.Kind, Next: s.Next, FormSchema: s.FormSchema}
		if sd.Next == nil {
			sd.Next = []string{}
		}
		if s.Description != "" {
			sd.Description = &s.Description
		}
		if s.Retry != nil {
			sd.RetryPolicy = retryPolicy(*s.Retry)
		}
		if s.Timeout > 0 {
			ms := millis(s.Timeout)
			sd.TimeoutMs = &ms
		}
		if s.WaitFor != nil {
			if s.WaitFor.Signal != "" {
				sig := s.WaitFor.Signal
				sd.WaitForSignal = &sig
			}
			sd.WaitForChildren = s.WaitFor.Children
		}
		out = append(out, sd)
	}
	return out
}

// workflowStats counts a filter's workflows in all and per status now, and per type when asked.
func (r *Resolver) workflowStats(ctx context.Context, f persistence.WorkflowFilter) (*model.WorkflowStats, error) {
	c, err := r.reads(ctx).WorkflowStatsUpTo(ctx, f, r.cfg.ExactCountUpTo)
	if err != nil {
		return nil, err
	}
	out := &model.WorkflowStats{Total: c.Total.N, TotalIsEstimate: c.Total.Estimate, ByStatus: statusCounts(c.ByStatus)}
	out.ByTypes = func(ctx context.Context) ([]*model.TypeCount, error) {
		types, err := r.reads(ctx).WorkflowStatsByTypeUpTo(ctx, f, r.cfg.ExactCountUpTo)
		if err != nil {
			return nil, err
		}
		list := make([]*model.TypeCount, 0, len(types))
		for _, t := range types {
			list = append(list, &model.TypeCount{Type: t.Type, Count: t.Total.N, IsEstimate: t.Total.Estimate,
				ByStatus: statusCounts(t.ByStatus)})
		}
		return list, nil
	}
	out.StuckCount = func(ctx context.Context) (int, error) { return r.stuckCount(ctx, f) }
	return out, nil
}

// statusCounts lists counts per status in the order of the status names.
func statusCounts(m map[persistence.Status]persistence.Count) []*model.StatusCount {
	out := make([]*model.StatusCount, 0, len(m))
	for st, c := range m {
		out = append(out, &model.StatusCount{Status: st, Count: c.N, IsEstimate: c.Estimate})
	}
	slices.SortFunc(out, func(a, b *model.StatusCount) int { return strings.Compare(string(a.Status), string(b.Status)) })
	return out
}
