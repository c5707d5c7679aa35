package remoteworker_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/remoteworker"
	"github.com/cairnflow/cairn/workflow"
)

// benchStore opens a fresh database of the backend named by CAIRN_BENCH_BACKEND (sqlite default).
func benchStore(b *testing.B) *persistence.Store {
	kind := persistence.KindSQLite
	if os.Getenv("CAIRN_BENCH_BACKEND") == "postgres" {
		kind = persistence.KindPostgres
	}
	return dbtest.Open(b, kind)
}

const benchWorkers = 4

// taskAPI is how a benchmark's workers reach the protocol: over GraphQL (the remoteworker client,
// as a worker in another process would) or by calling the engine's operations in process (what
// the resolvers call, without HTTP and gqlgen).
type taskAPI interface {
	poll(ctx context.Context, max, waitMs int, worker string) (tokens []string, err error)
	// complete ends a poll's tasks in one call (completeTasks; completeTask for one task).
	complete(ctx context.Context, tokens []string) error
}

type graphqlAPI struct{ c *remoteworker.Client }

func (a graphqlAPI) poll(ctx context.Context, max, waitMs int, worker string) ([]string, error) {
	tasks, err := a.c.Poll(ctx, remoteworker.PollParams{Functions: []string{"quote"}, Max: max, WaitMs: waitMs, Worker: worker})
	out := make([]string, len(tasks))
	for i, t := range tasks {
		out[i] = t.Token
	}
	return out, err
}

func (a graphqlAPI) complete(ctx context.Context, tokens []string) error {
	if len(tokens) == 1 {
		return a.c.Complete(ctx, tokens[0], map[string]int{"total": 1})
	}
	results := make([]remoteworker.Result, len(tokens))
	for i, t := range tokens {
		results[i] = remoteworker.Result{Token: t, Output: map[string]int{"total": 1}}
	}
	_, err := a.c.CompleteMany(ctx, results)
	return err
}

type engineAPI struct{ e *cairn.Node }

func (a engineAPI) poll(ctx context.Context, max, waitMs int, worker string) ([]string, error) {
	tasks, err := a.e.PollTasks(ctx, workflow.PollTasksParams{Functions: []string{"quote"}, Max: &max, WaitMs: &waitMs, Worker: worker})
	out := make([]string, len(tasks))
	for i, t := range tasks {
		out[i] = t.Token
	}
	return out, err
}

func (a engineAPI) complete(ctx context.Context, tokens []string) error {
	if len(tokens) == 1 {
		_, err := a.e.CompleteTask(ctx, tokens[0], []byte(`{"total": 1}`), nil)
		return err
	}
	results := make([]workflow.TaskResult, len(tokens))
	for i, t := range tokens {
		results[i] = workflow.TaskResult{Token: t, Output: []byte(`{"total": 1}`)}
	}
	_, err := a.e.CompleteTasks(ctx, results, nil)
	return err
}

// benchAPI is the transport CAIRN_BENCH_TRANSPORT names: graphql (the default) or engine.
func benchAPI(n *node) taskAPI {
	if os.Getenv("CAIRN_BENCH_TRANSPORT") == "engine" {
		return engineAPI{n.engine}
	}
	return graphqlAPI{remoteworker.New(n.url, remoteworker.Options{})}
}

// benchWorker polls batches of up to 100 tasks and completes each poll's tasks together with one
// completeTasks call, up to 4 calls at once, until ctx ends; received records when each task
// arrived. With CAIRN_BENCH_COMPLETE=each it completes each task with its own call instead, up to
// 32 at once (the protocol's completeTask, as before completeTasks).
func benchWorker(ctx context.Context, api taskAPI, name string, waitMs int, received func(id int64, at time.Time)) {
	each := os.Getenv("CAIRN_BENCH_COMPLETE") == "each"
	sem := make(chan struct{}, 4)
	if each {
		sem = make(chan struct{}, 32)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		tokens, err := api.poll(ctx, 100, waitMs, name)
		now := time.Now()
		if err != nil || len(tokens) == 0 {
			continue
		}
		if received != nil {
			for _, token := range tokens {
				id, _ := strconv.ParseInt(strings.SplitN(token, ".", 2)[0], 10, 64)
				received(id, now)
			}
		}
		batches := [][]string{tokens}
		if each {
			batches = batches[:0]
			for _, t := range tokens {
				batches = append(batches, []string{t})
			}
		}
		for _, batch := range batches {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				_ = api.complete(context.WithoutCancel(ctx), batch)
			}()
		}
	}
}

// endedTasks counts the remote tasks that ended.
func endedTasks(b *testing.B, store *persistence.Store) int {
	n, err := store.DB().NewSelect().Table("remote_tasks").Where("status = ?", persistence.RemoteTaskSucceeded).Count(context.Background())
	require.NoError(b, err)
	return int(n)
}

// BenchmarkRemoteTasks measures remote tasks end to end through the GraphQL API: b.N workflows,
// each one remote call, inserted 1000 at a time while the workers wait in their polls; the node's pool runs their steps (which create the
// tasks, then record their outputs) while 4 workers poll batches of up to 100 and complete each
// task with its own request (over GraphQL, or with CAIRN_BENCH_TRANSPORT=engine by calling the
// engine's operations in process). tasks/s is b.N over the span from the first task's creation to the
// last one's completion (the database's times).
//
//	CAIRN_BENCH_BACKEND=postgres TEST_DATABASE_URL=... go test ./remoteworker -run '^$' -bench RemoteTasks -benchtime 20000x
func BenchmarkRemoteTasks(b *testing.B) {
	poolConcurrency = 2000 // as a node serving many remote calls would run (cairn bench runs 8000)
	store := benchStore(b)
	n := startNode(b, store)
	// The workers wait in their polls before the workflows arrive, as they would in production.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := 0; i < benchWorkers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			benchWorker(ctx, benchAPI(n), "bench-"+strconv.Itoa(i), 1000, nil)
		}()
	}
	time.Sleep(300 * time.Millisecond)
	b.ResetTimer()
	ps := make([]workflow.StartParams, 0, 1000)
	for i := 0; i < b.N; i += 1000 {
		ps = ps[:0]
		for j := i; j < min(b.N, i+1000); j++ {
			ps = append(ps, workflow.StartParams{Type: quoteDef.Type, Input: []byte(`{"qty": 1}`)})
		}
		_, err := n.engine.StartMany(context.Background(), ps)
		require.NoError(b, err)
	}
	// The span comes from the rows' times, not from this loop: it looks rarely, since each count
	// scans the table on the machine it measures.
	for endedTasks(b, store) < b.N {
		time.Sleep(250 * time.Millisecond)
	}
	b.StopTimer()
	cancel()
	wg.Wait()
	var span struct {
		First time.Time `bun:"first"`
		Last  time.Time `bun:"last"`
	}
	require.NoError(b, store.DB().NewSelect().Table("remote_tasks").ColumnExpr("min(created) AS first, max(finished) AS last").Scan(context.Background(), &span))
	b.ReportMetric(float64(b.N)/span.Last.Sub(span.First).Seconds(), "tasks/s")
}

// BenchmarkRemoteTaskLatency measures how soon a task reaches a waiting long-poll: 4 workers wait
// in pollTasks (GraphQL) while workflows start at 200 a second; each task's latency is from its
// creation (its row, written by the step's completion) to the moment its poll answered the
// worker. It reports the median and the 99th percentile, and those of the time from a task's
// result to its workflow's end.
//
//	CAIRN_BENCH_BACKEND=postgres TEST_DATABASE_URL=... go test ./remoteworker -run '^$' -bench RemoteTaskLatency -benchtime 2000x
func BenchmarkRemoteTaskLatency(b *testing.B) {
	poolConcurrency = 2000
	store := benchStore(b)
	n := startNode(b, store)
	var mu sync.Mutex
	got := map[int64]time.Time{}
	received := func(id int64, at time.Time) { mu.Lock(); got[id] = at; mu.Unlock() }
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := 0; i < benchWorkers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			benchWorker(ctx, benchAPI(n), "bench-"+strconv.Itoa(i), 10000, received)
		}()
	}
	time.Sleep(500 * time.Millisecond) // the workers are waiting in their polls
	b.ResetTimer()
	tick := time.NewTicker(5 * time.Millisecond)
	for i := 0; i < b.N; i++ {
		<-tick.C
		n.start(b, `{"qty": 1}`)
	}
	tick.Stop()
	for endedTasks(b, store) < b.N {
		time.Sleep(20 * time.Millisecond)
	}
	b.StopTimer()
	cancel()
	wg.Wait()
	var rows []struct {
		ID      int64     `bun:"id"`
		Created time.Time `bun:"created"`
	}
	require.NoError(b, store.DB().NewSelect().Table("remote_tasks").Column("id", "created").Scan(context.Background(), &rows))
	lat := make([]float64, 0, len(rows))
	for _, r := range rows {
		if at, ok := got[r.ID]; ok {
			lat = append(lat, float64(at.Sub(r.Created).Microseconds())/1000)
		}
	}
	require.Len(b, lat, b.N)
	slices.Sort(lat)
	b.ReportMetric(lat[len(lat)/2], "p50_ms")
	b.ReportMetric(lat[len(lat)*99/100], "p99_ms")
	resultToEnd(b, store)
}

// resultToEnd reports how long the workflows took from their task's result to their end (the
// step that takes the output, and its completion): the median and the 99th percentile, from the
// rows' times (the node's clock).
func resultToEnd(b *testing.B, store *persistence.Store) {
	ctx := context.Background()
	for {
		n, err := store.DB().NewSelect().Table("workflows").Where("status = ?", persistence.StatusFinished).Count(ctx)
		require.NoError(b, err)
		if n >= int64(b.N) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	var rows []struct {
		Result time.Time `bun:"result"`
		Ended  time.Time `bun:"ended"`
	}
	require.NoError(b, store.DB().NewSelect().TableExpr("remote_tasks AS rt").Join("JOIN workflows AS w ON w.id = rt.workflow_id").
		ColumnExpr("rt.finished AS result, w.finished AS ended").Scan(ctx, &rows))
	lat := make([]float64, len(rows))
	for i, r := range rows {
		lat[i] = float64(r.Ended.Sub(r.Result).Microseconds()) / 1000
	}
	slices.Sort(lat)
	b.ReportMetric(lat[len(lat)/2], "result_to_end_p50_ms")
	b.ReportMetric(lat[len(lat)*99/100], "result_to_end_p99_ms")
}
