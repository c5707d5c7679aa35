package engine

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/cairnflow/cairn/internal/tracing"
	"github.com/cairnflow/cairn/persistence"
)

// traceCache keeps the traceparents of recently traced workflows ("" for one started under none),
// so that a workflow's steps read its trace once per node, not once per step.
type traceCache struct {
	mu sync.Mutex
	m  map[int64]string
}

// maxTraceCache bounds the cache; it starts over when full.
const maxTraceCache = 100_000

// traceparentOf returns the traceparent a workflow was started under ("" when none).
func (e *Engine) traceparentOf(ctx context.Context, id int64) string {
	e.traces.mu.Lock()
	tp, ok := e.traces.m[id]
	e.traces.mu.Unlock()
	if ok {
		return tp
	}
	got, err := e.store.WorkflowTraceparents(ctx, []int64{id})
	if err != nil {
		return "" // a step is never failed by its tracing
	}
	tp = got[id]
	e.traces.mu.Lock()
	if e.traces.m == nil || len(e.traces.m) >= maxTraceCache {
		e.traces.m = map[int64]string{}
	}
	e.traces.m[id] = tp
	e.traces.mu.Unlock()
	return tp
}

// Execute runs one attempt (execute), in a span of the workflow's trace while tracing is on.
func (e *Engine) Execute(ctx context.Context, p ExecuteParams) *Outcome {
	if !tracing.Enabled() {
		return e.execute(ctx, p)
	}
	w := p.Workflow
	ctx = tracing.ContextOf(ctx, e.traceparentOf(ctx, w.ID))
	ctx, span := tracing.Tracer().Start(ctx, "cairn.step "+w.Type+"/"+w.State, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.Int64("cairn.workflow.id", w.ID), attribute.String("cairn.workflow.type", w.Type),
			attribute.String("cairn.state", w.State), attribute.Int("cairn.attempt", w.Retries+1)))
	defer span.End()
	o := e.execute(ctx, p)
	outcome := string(o.completion.Status)
	if o.task != nil {
		outcome = string(o.task.Status)
		span.SetAttributes(attribute.Int("cairn.attempt", o.task.Attempt))
		if o.task.Status != persistence.TaskSucceeded && o.task.Error != nil {
			span.SetStatus(codes.Error, *o.task.Error)
		}
	}
	span.SetAttributes(attribute.String("cairn.outcome", outcome), attribute.String("cairn.next_state", o.completion.State))
	return o
}

// traceStart opens the span of a start (or several), whose context the new workflows store.
func traceStart(ctx context.Context, n int, typ string) (context.Context, trace.Span) {
	if !tracing.Enabled() {
		return ctx, noop.Span{} // the request's own trace context (if any) is stored as it is
	}
	return tracing.Tracer().Start(ctx, "cairn.start "+typ, trace.WithAttributes(attribute.String("cairn.workflow.type", typ),
		attribute.Int("cairn.workflows", n)))
}

// traceTasks records a span per remote task that ended, from its lease to now, in its
// workflow's trace.
func (e *Engine) traceTasks(ctx context.Context, tasks []*persistence.RemoteTask) {
	if !tracing.Enabled() {
		return
	}
	end := time.Now()
	for _, t := range tasks {
		if t == nil {
			continue
		}
		start := end
		if t.Leased != nil {
			start = *t.Leased
		}
		tctx := tracing.ContextOf(context.WithoutCancel(ctx), e.traceparentOf(ctx, t.WorkflowID))
		worker := ""
		if t.Worker != nil {
			worker = *t.Worker
		}
		_, span := tracing.Tracer().Start(tctx, "cairn.remote "+t.Function, trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindProducer),
			trace.WithAttributes(attribute.String("cairn.function", t.Function), attribute.Int64("cairn.workflow.id", t.WorkflowID),
				attribute.String("cairn.worker", worker), attribute.Int("cairn.attempt", t.Attempt), attribute.String("cairn.outcome", string(t.Status))))
		if t.Status == persistence.RemoteTaskFailed {
			span.SetStatus(codes.Error, "the worker failed the task")
		}
		span.End(trace.WithTimestamp(end))
	}
}
