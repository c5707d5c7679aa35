package serverless

import (
	"context"
	"errors"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMemoryBudgetStopsGrowthBetweenInstructions: a string of 256 MB doubled by each of the next
// instructions outran a heap reading every 32 instructions (745 MB allocated under a budget of
// 128 MB); the watch stops it at the first instruction past the budget.
func TestMemoryBudgetStopsGrowthBetweenInstructions(t *testing.T) {
	x, err := compileExpr(`("x" * 2.6e8) as $s | $s + $s | . + . | . + . | length`, scope{}, "/")
	require.NoError(t, err)
	ctx := withBudget(context.Background(), ExpressionOptions{Timeout: time.Minute, MaxBytes: 128 << 20})
	allocs := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(allocs)
	before := allocs[0].Value.Uint64()
	_, err = x.eval(ctx, nil, nil)
	metrics.Read(allocs)
	allocated := (allocs[0].Value.Uint64() - before) >> 20
	var be *BudgetError
	require.True(t, errors.As(err, &be), "%v", err)
	require.False(t, be.Timeout)
	t.Logf("allocated %d MB before it was stopped", allocated)
	require.Less(t, allocated, uint64(600), "the first 512 MB doubling must not run")
}
