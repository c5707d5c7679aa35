package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
	"github.com/cairnflow/cairn/workflow/demo"
)

// procStatusKB reads a field of /proc/PID/status, in kB.
func procStatusKB(t *testing.T, pid int, field string) int {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			require.NoError(t, err)
			return kb
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// A query of modest cost whose JSON fields hold hundreds of megabytes (variablesAfter of 50
// actions of 10 workflows, each with a 1 MB variable: 500 MB of JSON once built) ends with
// RESPONSE_TOO_LARGE, and the node's memory stays near the response limit instead of growing by
// the whole. (Fifty workflows, 2.5 GB, took a minute to write under the race detector.)
func TestHugeResponsesStopAtTheByteLimit(t *testing.T) {
	t.Parallel()
	const workflows, actions = 10, 50
	url := dbtest.URL(t, persistence.KindSQLite)
	ctx := context.Background()
	store, err := persistence.Open(ctx, url, persistence.OpenOptions{MaxConns: 1})
	require.NoError(t, err)
	_, err = store.Migrate(ctx)
	require.NoError(t, err)
	engine := engine.New(store, engine.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, demo.Register(ctx, engine))
	blob, err := json.Marshal(map[string]string{"blob": strings.Repeat("x", 1_000_000)})
	require.NoError(t, err)
	for range workflows {
		res, err := engine.Start(ctx, workflow.StartParams{Type: "demo.order"})
		require.NoError(t, err)
		// One action sets the 1 MB variable; the others (made in one statement, for speed) change
		// nothing, so the variables after each of them hold it.
		w, err := engine.Update(ctx, workflow.UpdateParams{ChangeParams: workflow.ChangeParams{ID: res.Workflow.ID}, Variables: blob})
		require.NoError(t, err)
		more := make([]*persistence.Action, actions-1)
		for i := range more {
			more[i] = &persistence.Action{WorkflowID: w.ID, Type: persistence.ActionExternalChange, State: w.State}
		}
		require.NoError(t, store.ActionInsertMany(ctx, more))
	}
	require.NoError(t, store.Close())

	n := startNode(t, nil, "--database", url, "--demo", "--no-workers", "--addr", "127.0.0.1:0", "--log-format", "json")
	pid := n.cmd.Process.Pid
	before := procStatusKB(t, pid, "VmRSS")
	q := fmt.Sprintf(`{ workflows(first: %d) { nodes { id actions(first: %d) { nodes { variablesAfter } } } } }`, workflows, actions)
	r := n.query(t, q)
	require.Equal(t, 200, r.status)
	require.Equal(t, "RESPONSE_TOO_LARGE", r.code(), "%.300s", r.raw)
	require.Contains(t, r.errors[0].Message, "the response is over")
	hwm := procStatusKB(t, pid, "VmHWM")
	t.Logf("node memory: %d MB before the query, high-water mark %d MB after it; response %d bytes", before>>10, hwm>>10, len(r.raw))
	// 500 MB of JSON were asked for; the default limit is 32 MiB. Loading the page of workflows
	// (1 MB of variables each) takes the node some tens of MB. The race detector, when on, triples
	// the node's memory.
	bound := 250 << 10
	if raceEnabled {
		bound *= 3
	}
	require.Less(t, hwm-before, bound, "the node's memory grew by %d MB", (hwm-before)>>10)
	require.Less(t, len(r.raw), 64<<20, "the response itself stays near the limit")

	// A query within the limit still answers.
	r = n.query(t, `{ workflows(first: 2) { nodes { id actions(first: 2) { nodes { variablesAfter } } } } }`)
	require.Empty(t, r.errors, "%.300s", r.raw)
}
