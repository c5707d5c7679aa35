package graph_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph"
	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// BenchmarkLiveFanOutWebsockets is BenchmarkLiveFanOut through the node's HTTP handler. The
// subscriptions (10,000 on 100 websockets unless CAIRN_BENCH_SUBSCRIBERS and
// CAIRN_BENCH_WEBSOCKETS say otherwise) are those of a client process of their own
// (bench/subscribers), so that the node's cost is told apart from theirs; CAIRN_BENCH_RATE paces
// the starts (a second). It reports the start rate (compare with subscribers=0), the delivery
// delay p50 and p99 as the client measured it, and the CPU seconds of the node's process and of
// the client's per 1,000 starts.
// Run: go test -run '^$' -bench LiveFanOutWebsockets -benchtime 5000x ./graph
func BenchmarkLiveFanOutWebsockets(b *testing.B) {
	counts := graph.BenchInts(b, "CAIRN_BENCH_SUBSCRIBERS", 0, 10000)
	sockets := graph.BenchInts(b, "CAIRN_BENCH_WEBSOCKETS", 100)[0]
	rate := graph.BenchInts(b, "CAIRN_BENCH_RATE", 0)[0]
	client := filepath.Join(b.TempDir(), "subscribers")
	out, err := exec.Command("go", "build", "-o", client, "../bench/subscribers").CombinedOutput()
	require.NoError(b, err, "%s", out)
	for _, kind := range dbtest.Backends {
		for _, subscribers := range counts {
			b.Run(fmt.Sprintf("%s/subscribers=%d", kind, subscribers), func(b *testing.B) {
				benchWebsockets(b, dbtest.Open(b, kind), client, subscribers, min(sockets, max(subscribers, 1)), rate)
			})
		}
	}
}

func benchWebsockets(b *testing.B, store *persistence.Store, client string, subscribers, sockets, rate int) {
	bu := setup(b, store, func(c *server.Config) {
		c.MaxSubscriptions = subscribers + 1
		c.MaxSubscriptionsPerConnection = (subscribers + sockets - 1) / sockets
	})
	graph.RegisterFanOutTypes(b, bu.engine)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdin io.WriteCloser
	var lines *bufio.Scanner
	var cmd *exec.Cmd
	if subscribers > 0 {
		cmd = exec.CommandContext(ctx, client, "-url", "ws"+strings.TrimPrefix(bu.srv.URL, "http")+"/graphql",
			"-type", "test.other", "-subscriptions", strconv.Itoa(subscribers), "-websockets", strconv.Itoa(sockets))
		cmd.Stderr = os.Stderr
		var err error
		stdin, err = cmd.StdinPipe()
		require.NoError(b, err)
		stdout, err := cmd.StdoutPipe()
		require.NoError(b, err)
		require.NoError(b, cmd.Start())
		lines = bufio.NewScanner(stdout)
		require.True(b, lines.Scan())
		require.Equal(b, "subscribed", lines.Text())
		// Probe workflows until every subscription has had an event: all are registered.
		ready := make(chan bool, 1)
		go func() { ready <- lines.Scan() && lines.Text() == "ready" }()
	probe:
		for {
			_, err := bu.engine.Start(ctx, workflow.StartParams{Type: "test.other"})
			require.NoError(b, err)
			select {
			case ok := <-ready:
				require.True(b, ok, "the client never had an event on every subscription")
				break probe
			case <-time.After(200 * time.Millisecond):
			}
		}
		_, err = io.WriteString(stdin, "go\n")
		require.NoError(b, err)
	}
	cpu0 := selfCPU()
	b.ResetTimer()
	elapsed, err := graph.RunFanOutStarts(ctx, bu.engine, b.N, rate)
	require.NoError(b, err)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "starts/s")
	if subscribers == 0 {
		b.ReportMetric((selfCPU()-cpu0).Seconds()*1000/float64(b.N), "node-cpu-s/1k")
		return
	}
	_, err = fmt.Fprintf(stdin, "want %d\n", subscribers*(b.N/50))
	require.NoError(b, err)
	require.True(b, lines.Scan())
	b.ReportMetric((selfCPU()-cpu0).Seconds()*1000/float64(b.N), "node-cpu-s/1k")
	var res struct {
		Events int     `json:"events"`
		Errors int     `json:"errors"`
		Want   int     `json:"want"`
		P50    float64 `json:"p50_ms"`
		P99    float64 `json:"p99_ms"`
	}
	require.NoError(b, json.Unmarshal(lines.Bytes(), &res), lines.Text())
	require.NoError(b, cmd.Wait())
	b.ReportMetric(float64(res.Events)/float64(res.Want), "delivered")
	b.ReportMetric(float64(res.Errors), "errors")
	b.ReportMetric(res.P50, "p50-ms")
	b.ReportMetric(res.P99, "p99-ms")
	b.ReportMetric((cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime()).Seconds()*1000/float64(b.N), "client-cpu-s/1k")
}

// selfCPU is the CPU time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
