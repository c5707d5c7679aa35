package main

import (
	"bufio"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// nodeGCPercent is the collector's target for a node: the heap may grow to five times what is
// live before a collection. A node allocates a little for each request and step and keeps little,
// so at Go's default (100) collecting took about a quarter of its CPU under 64 clients' starts.
const nodeGCPercent = 400

// tuneCollector sets the Go collector for a node that runs the engine (serve, bench), as far as
// the environment leaves it: without GOGC, the target above; without GOGC and GOMEMLIMIT, also a
// soft limit of three quarters of the memory the process may use (its cgroup's limit, else the
// machine's), so that the larger target never takes a node near that limit: there the collector
// runs as often as it must instead. It returns the target and the limit in force.
func tuneCollector(getenv func(string) string) (gcPercent int, limit int64) {
	gogc, memLimit := getenv("GOGC"), getenv("GOMEMLIMIT")
	if gogc == "" {
		debug.SetGCPercent(nodeGCPercent)
		if total := memoryAvailable(); memLimit == "" && total > 0 {
			debug.SetMemoryLimit(total / 4 * 3)
		}
	}
	gcPercent = debug.SetGCPercent(-1)
	debug.SetGCPercent(gcPercent)
	return gcPercent, debug.SetMemoryLimit(-1)
}

// memoryAvailable is the memory this process may use: its cgroup's limit (v2, then v1) when one
// is set and below the machine's memory, else the machine's (0 when neither can be read).
func memoryAvailable() int64 {
	total := memTotal()
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (total == 0 || n < total) {
			return n
		}
	}
	return total
}

// memTotal is the machine's memory from /proc/meminfo (0 when it cannot be read).
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}
