package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A node sets Go's collector to a target of 400% of the live heap, with a soft memory limit of
// three quarters of the memory it may use, unless the environment sets GOGC (then both are left
// to it) or GOMEMLIMIT (then the limit is): read from the runtime's own metrics.
func TestNodeTunesTheCollectorUnlessTheEnvironmentDoes(t *testing.T) {
	t.Parallel()
	gauge := func(t *testing.T, metrics, name string) float64 {
		for _, line := range strings.Split(metrics, "\n") {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				f, err := strconv.ParseFloat(v, 64)
				require.NoError(t, err, line)
				return f
			}
		}
		t.Fatalf("no %s in the metrics", name)
		return 0
	}
	noLimit := float64(1<<63 - 1)
	for _, c := range []struct {
		env          []string
		gogc, limit  float64
		limitFromMem bool
	}{
		{env: nil, gogc: 400, limitFromMem: true},
		{env: []string{"GOGC=150"}, gogc: 150, limit: noLimit},
		{env: []string{"GOMEMLIMIT=1GiB"}, gogc: 400, limit: 1 << 30},
	} {
		t.Run(fmt.Sprint(c.env), func(t *testing.T) {
			t.Parallel()
			n := startNode(t, append([]string{"GOGC=", "GOMEMLIMIT="}, c.env...), "--database", "sqlite://"+t.TempDir()+"/c.db", "--addr", "127.0.0.1:0", "--log-format", "json")
			code, metrics := n.get(t, "/metrics")
			require.Equal(t, 200, code)
			require.Equal(t, c.gogc, gauge(t, metrics, "go_gc_gogc_percent"))
			limit := c.limit
			if c.limitFromMem {
				require.Positive(t, memoryAvailable())
				limit = float64(memoryAvailable() / 4 * 3)
			}
			require.InDelta(t, limit, gauge(t, metrics, "go_gc_gomemlimit_bytes"), 1)
		})
	}
}
