package persistence_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// BenchmarkAttributeFilteredPage measures a page of 100 workflows filtered by search attributes
// among CAIRN_BENCH_WORKFLOWS workflows (100,000 by default), each with three attributes: a
// customer (1,000 of them: 100 workflows each, 0.1 %), a region (10) and an amount, on the backend
// CAIRN_BENCH_BACKEND names (postgres by default; sqlite, mysql).
func BenchmarkAttributeFilteredPage(b *testing.B) {
	store, n := benchStore(b, "CAIRN_BENCH_WORKFLOWS")
	ctx := context.Background()
	const batch = 2000
	for done := 0; done < n; done += batch {
		size := min(batch, n-done)
		wfs := make([]*persistence.Workflow, size)
		for i := range wfs {
			wfs[i] = newWorkflow("bench.attrs", persistence.StatusFinished, nil)
		}
		require.NoError(b, store.WorkflowInsertMany(ctx, wfs))
		attrs := make([]*persistence.WorkflowAttribute, 0, 3*size)
		for i, w := range wfs {
			k := done + i
			attrs = append(attrs,
				persistence.NewWorkflowAttribute(w.ID, "customer", persistence.AttributeValue{Kind: persistence.AttributeString, S: fmt.Sprintf("c-%d", k%1000)}),
				persistence.NewWorkflowAttribute(w.ID, "region", persistence.AttributeValue{Kind: persistence.AttributeString, S: fmt.Sprintf("region-%d", k%10)}),
				persistence.NewWorkflowAttribute(w.ID, "amount", persistence.AttributeValue{Kind: persistence.AttributeNumber, N: float64(k % 997)}))
		}
		require.NoError(b, store.WorkflowAttributeInsertMany(ctx, attrs))
	}
	require.NoError(b, store.Analyze(ctx))
	str := func(s string) persistence.AttributeValue {
		return persistence.AttributeValue{Kind: persistence.AttributeString, S: s}
	}
	for _, c := range []struct {
		name string
		f    []persistence.AttributeFilter
	}{
		{"customer=eq", []persistence.AttributeFilter{{Name: "customer", Kind: persistence.AttributeString, Op: persistence.AttributeEq, Values: []persistence.AttributeValue{str("c-42")}}}},
		{"region=eq,amount=gt", []persistence.AttributeFilter{
			{Name: "region", Kind: persistence.AttributeString, Op: persistence.AttributeEq, Values: []persistence.AttributeValue{str("region-3")}},
			{Name: "amount", Kind: persistence.AttributeNumber, Op: persistence.AttributeGt, Values: []persistence.AttributeValue{{Kind: persistence.AttributeNumber, N: 900}}}}},
		{"customer=prefix", []persistence.AttributeFilter{{Name: "customer", Kind: persistence.AttributeString, Op: persistence.AttributePrefix, Values: []persistence.AttributeValue{str("c-99")}}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := persistence.WorkflowListParams{Filter: persistence.WorkflowFilter{Attributes: c.f}, Desc: true, Limit: 100, OmitData: true}
			for b.Loop() {
				page, _, err := store.WorkflowList(ctx, p)
				if err != nil || len(page) == 0 {
					b.Fatalf("page of %d: %v", len(page), err)
				}
			}
		})
	}
}

// benchStore opens a fresh database of the backend CAIRN_BENCH_BACKEND names (postgres by default;
// sqlite, mysql) and reads the benchmark's size from the variable sizeVar (100,000 by default).
func benchStore(b *testing.B, sizeVar string) (*persistence.Store, int) {
	kind := persistence.KindPostgres
	if k := os.Getenv("CAIRN_BENCH_BACKEND"); k != "" {
		kind = persistence.Kind(k)
	}
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv(sizeVar)); err == nil && v > 0 {
		n = v
	}
	return dbtest.Open(b, kind), n
}
