// Command dbos runs DBOS Transact Go's one-step durable workflows in process, from 64 goroutines
// each starting a workflow and waiting for its result, on the PostgreSQL in DBOS_DATABASE_URL: the
// peer figure beside `cairn bench --api` in docs/performance.md. A module of its own, so cairn does
// not depend on DBOS.
//
//	DBOS_DATABASE_URL=postgres://.../dbos go run . -n 20000 -c 64
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
)

// step does nothing, as bench.noop's step.
func step(context.Context) (string, error) { return "ok", nil }

// noop is a workflow of one step.
func noop(ctx dbos.Context, _ string) (string, error) {
	return dbos.RunAsStep(ctx, step)
}

func main() {
	n := flag.Int("n", 20000, "workflows")
	c := flag.Int("c", 64, "goroutines")
	flag.Parse()
	dctx, err := dbos.NewContext(context.Background(), dbos.Config{AppName: "bench", DatabaseURL: os.Getenv("DBOS_DATABASE_URL")})
	if err != nil {
		panic(err)
	}
	dbos.RegisterWorkflow(dctx, noop)
	if err := dbos.Launch(dctx); err != nil {
		panic(err)
	}
	defer dbos.Shutdown(dctx, 5*time.Second)
	var next atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	start := time.Now()
	for range *c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for next.Add(1) <= int64(*n) {
				t := time.Now()
				h, err := dbos.RunWorkflow(dctx, noop, "x")
				if err != nil {
					panic(err)
				}
				if _, err := h.GetResult(); err != nil {
					panic(err)
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	el := time.Since(start)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	fmt.Printf("dbos workflows/s %.0f p50 %.1f ms p99 %.1f ms\n", float64(*n)/el.Seconds(), float64(lat[len(lat)/2].Microseconds())/1000, float64(lat[len(lat)*99/100].Microseconds())/1000)
}
