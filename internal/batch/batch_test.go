package batch

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestGroupRunsQueuedCallsTogether(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	g := &Group[int, int]{MaxBatch: 3, Run: Whole(func(_ context.Context, qs []int) ([]int, error) {
		mu.Lock()
		first := len(sizes) == 0
		sizes = append(sizes, len(qs))
		mu.Unlock()
		if first {
			<-release // the others queue meanwhile
		}
		rs := make([]int, len(qs))
		for i, q := range qs {
			rs[i] = q * 10
		}
		return rs, nil
	})}
	var wg sync.WaitGroup
	results := make([]int, 7)
	wg.Go(func() { results[0], _ = g.Do(t.Context(), 0) })
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(sizes) == 1 }, time.Second, time.Millisecond)
	for i := 1; i < 7; i++ {
		wg.Go(func() { results[i], _ = g.Do(t.Context(), i) })
	}
	require.Eventually(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.queue) == 6 }, time.Second, time.Millisecond)
	close(release)
	wg.Wait()
	require.Equal(t, []int{1, 3, 3}, sizes, "one leader, batches of at most MaxBatch")
	for i, r := range results {
		require.Equal(t, i*10, r)
	}
}

func TestGroupHandsOutErrorsPerCallOrForTheBatch(t *testing.T) {
	t.Parallel()
	odd := errors.New("odd")
	g := &Group[int, int]{Run: func(_ context.Context, qs []int) ([]int, []error, error) {
		rs, errs := make([]int, len(qs)), make([]error, len(qs))
		for i, q := range qs {
			if q%2 == 1 {
				errs[i] = odd
			} else {
				rs[i] = q
			}
		}
		return rs, errs, nil
	}}
	rs, errs := g.DoMany(t.Context(), []int{2, 3, 4})
	require.Equal(t, []int{2, 0, 4}, rs)
	require.Equal(t, []error{nil, odd, nil}, errs)

	broken := errors.New("broken")
	g = &Group[int, int]{Run: Whole(func(context.Context, []int) ([]int, error) { return nil, broken })}
	_, err := g.Do(t.Context(), 1)
	require.ErrorIs(t, err, broken)
}

func TestGroupAbandonLetsACallerGoWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	g := &Group[int, int]{Abandon: true, Run: Whole(func(_ context.Context, qs []int) ([]int, error) {
		<-release
		return qs, nil
	})}
	leading := make(chan struct{})
	go func() {
		close(leading)
		_, _ = g.Do(context.Background(), 1)
	}()
	<-leading
	require.Eventually(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return g.leaders == 1 && len(g.queue) == 0 }, time.Second, time.Millisecond)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	_, err := g.Do(ctx, 2) // queued behind the running batch
	require.ErrorIs(t, err, context.DeadlineExceeded)
	close(release)
}
