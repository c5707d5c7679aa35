package main

import (
	"time"

	"github.com/cairnflow/cairn/internal/serverless"
)

// exprLimits are the budget of one Serverless Workflow expression's evaluation (README, "Limits"):
// past it, the task faults instead of the node running out of memory or a core.
type exprLimits struct {
	timeout time.Duration
	maxMB   int64
}

func (l *exprLimits) register(fs *flagSet) {
	fs.DurationVar(&l.timeout, "expression-timeout", serverless.DefaultExpressionTimeout, "longest time one jq expression may run; past it the task faults with a timeout (408). Sorting and grouping 1 MiB of JSON took 360ms")
	fs.Int64Var(&l.maxMB, "expression-max-mb", serverless.DefaultExpressionMaxBytes>>20, "most megabytes the node's heap may grow while one jq expression runs; past it the task faults with a runtime error (500). Expressions over 1 MiB of JSON allocated 15 to 38 MB")
}

func (l *exprLimits) check() error {
	if l.timeout <= 0 {
		return usagef("--expression-timeout must be positive, not %s", l.timeout)
	}
	if l.maxMB <= 0 || l.maxMB > 1<<20 {
		return usagef("--expression-max-mb must be between 1 and %d, not %d", 1<<20, l.maxMB)
	}
	return nil
}

func (l *exprLimits) options() serverless.ExpressionOptions {
	return serverless.ExpressionOptions{Timeout: l.timeout, MaxBytes: l.maxMB << 20}
}
