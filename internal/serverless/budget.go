package serverless

import (
	"context"
	"errors"
	"fmt"
	"runtime/metrics"
	"time"
)

// The default budget of one expression, measured over the largest data a task gets (1 MiB: an HTTP
// response, a workflow's input), 20,000 objects: sorting, grouping and re-encoding them took 360 ms
// and allocated 15 MB on a busy 2-core machine, collecting every value of every object 190 ms and
// 38 MB. [range(1e9)] reaches 128 MB in about 0.9 s.
const (
	DefaultExpressionTimeout  = 2 * time.Second
	DefaultExpressionMaxBytes = 128 << 20
)

// ExpressionOptions bound the evaluation of every expression of a document. Zero fields take the
// defaults.
type ExpressionOptions struct {
	// Timeout is the longest one evaluation may run.
	Timeout time.Duration
	// MaxBytes is how much the node's heap may grow while one evaluation runs.
	MaxBytes int64
}

func (o ExpressionOptions) withDefaults() ExpressionOptions {
	if o.Timeout <= 0 {
		o.Timeout = DefaultExpressionTimeout
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultExpressionMaxBytes
	}
	return o
}

// budgetKey carries a run's ExpressionOptions in its context, so that every expression of the
// run, wherever it is evaluated, gets the node's budget.
type budgetKey struct{}

// withBudget is ctx carrying the budget of its expressions.
func withBudget(ctx context.Context, o ExpressionOptions) context.Context {
	return context.WithValue(ctx, budgetKey{}, o.withDefaults())
}

func budgetOf(ctx context.Context) ExpressionOptions {
	o, _ := ctx.Value(budgetKey{}).(ExpressionOptions)
	return o.withDefaults()
}

// BudgetError is an expression stopped for running past its budget. Its Problem is a timeout
// (status 408) or a runtime error (status 500, memory).
type BudgetError struct {
	Timeout bool
	// Value marks a value (the expression's, or the input of a builtin that writes it out) that
	// would take more than the memory budget as JSON.
	Value bool
	// Index is an array index whose array would take more than the memory budget.
	Index string
	Limit string
}

func (e *BudgetError) Error() string {
	switch {
	case e.Timeout:
		return "the expression ran longer than its budget of " + e.Limit
	case e.Index != "":
		return "the array index " + e.Index + " would make an array larger than the expression's budget of " + e.Limit
	case e.Value:
		return "a value of the expression would take more than its budget of " + e.Limit + " as JSON"
	}
	return "the expression grew the node's memory by more than its budget of " + e.Limit
}

// budgetProblem is the Problem of an expression over its budget, nil for any other fault.
func budgetProblem(instance string, err error) *Problem {
	var be *BudgetError
	if !errors.As(err, &be) {
		return nil
	}
	if be.Timeout {
		return &Problem{Type: errTypeTimeout, Status: 408, Title: "Expression Timeout", Detail: be.Error(), Instance: instance}
	}
	return &Problem{Type: errTypeRuntime, Status: 500, Title: "Expression Out of Memory", Detail: be.Error(), Instance: instance}
}

// An evaluation reads the node's heap (about 300 ns) once it has run watchAfter instructions (a
// path like .a.b takes fewer, and is never measured), then whenever readEvery has passed since its
// last reading, checking the clock before every instruction. Time, not a count of instructions,
// because one instruction can build a 256 MB string ("x" * 2.6e8) and the next double it: an
// instruction that allocates much takes long, so the next one starts only after a reading.
const (
	watchAfter = 4
	readEvery  = time.Millisecond
)

var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

const heapMetric = "/memory/classes/heap/objects:bytes"

func readHeap(sample []metrics.Sample) uint64 {
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}

// meter is the context an evaluation runs with. gojq asks for Done before every instruction, and
// has no memory limit of its own (no value it builds is visible from outside): the meter counts the
// instructions and reads the heap. The heap is the node's, so an expression that runs while another
// one grows it may be stopped too.
type meter struct {
	context.Context // the evaluation's deadline within the step's context
	steps           int
	base, maxBytes  uint64
	lastRead        time.Time
	sample          []metrics.Sample
	over            error
}

func newMeter(ctx context.Context, maxBytes int64) *meter {
	m := &meter{Context: ctx, maxBytes: uint64(maxBytes), sample: []metrics.Sample{{Name: heapMetric}}}
	m.base = readHeap(m.sample)
	return m
}

// Done is called by gojq from the evaluating goroutine only.
func (m *meter) Done() <-chan struct{} {
	if m.over != nil {
		return closedDone
	}
	if m.steps < watchAfter {
		if m.steps++; m.steps < watchAfter {
			return m.Context.Done()
		}
	} else if time.Since(m.lastRead) < readEvery {
		return m.Context.Done()
	}
	m.lastRead = time.Now()
	if h := readHeap(m.sample); h > m.base && h-m.base > m.maxBytes {
		m.over = &BudgetError{Limit: fmt.Sprintf("%d MB", m.maxBytes>>20)}
		return closedDone
	}
	return m.Context.Done()
}

func (m *meter) Err() error {
	if m.over != nil {
		return m.over
	}
	return m.Context.Err()
}

// evalWithin evaluates with ctx's budget: fn gets the meter to run with; a deadline of the budget (not
// of the step) becomes a BudgetError.
func evalWithin(ctx context.Context, fn func(ctx context.Context) (any, error)) (any, error) {
	b := budgetOf(ctx)
	errTimeout := &BudgetError{Timeout: true, Limit: b.Timeout.String()}
	tctx, cancel := context.WithTimeoutCause(ctx, b.Timeout, errTimeout)
	defer cancel()
	v, err := fn(newMeter(tctx, b.MaxBytes))
	if err != nil && errors.Is(err, context.DeadlineExceeded) && context.Cause(tctx) == errTimeout && ctx.Err() == nil {
		return nil, errTimeout
	}
	if err == nil && jsonSize(v, b.MaxBytes) > b.MaxBytes {
		return nil, &BudgetError{Limit: fmt.Sprintf("%d MB", b.MaxBytes>>20), Value: true}
	}
	return v, err
}
