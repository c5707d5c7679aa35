package graph

import (
	"time"

	"github.com/cairnflow/cairn/graph/model"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// definitionSpec decodes the stored spec of a definition version.
func definitionSpec(d *persistence.Definition) (*workflow.Definition, error) {
	return workflow.ParseSpec(d.Spec)
}

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

// workflowStats folds the Store's counts by type and status into the API's shape.
func workflowStats(rows []persistence.WorkflowStatRow) *model.WorkflowStats {
	out := &model.WorkflowStats{ByStatus: []*model.StatusCount{}, ByType: []*model.TypeCount{}}
	byStatus := map[persistence.Status]*model.StatusCount{}
	byType := map[string]*model.TypeCount{}
	for _, r := range rows {
		out.Total += r.Count
		sc := byStatus[r.Status]
		if sc == nil {
			sc = &model.StatusCount{Status: r.Status}
			byStatus[r.Status] = sc
			out.ByStatus = append(out.ByStatus, sc)
		}
		sc.Count += r.Count
		tc := byType[r.Type]
		if tc == nil {
			tc = &model.TypeCount{Type: r.Type}
			byType[r.Type] = tc
			out.ByType = append(out.ByType, tc)
		}
		tc.Count += r.Count
		tc.ByStatus = append(tc.ByStatus, &model.StatusCount{Status: r.Status, Count: r.Count})
	}
	return out
}
