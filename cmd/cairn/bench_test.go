package main

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// benchFigures is the JSON object cairn bench --json prints.
type benchFigures struct {
	WorkflowsPerSec float64  `json:"workflows_per_sec"`
	StepsPerSec     float64  `json:"steps_per_sec"`
	FirstStepP50ms  *float64 `json:"first_step_p50_ms"`
	FirstStepP90ms  *float64 `json:"first_step_p90_ms"`
	FirstStepP99ms  *float64 `json:"first_step_p99_ms"`
	FinishP50ms     *float64 `json:"finish_p50_ms"`
	FinishP99ms     *float64 `json:"finish_p99_ms"`
	Count           int      `json:"count"`
	Finished        int      `json:"finished"`
	Steps           int      `json:"steps"`
	Seconds         float64  `json:"seconds"`
	Probes          int      `json:"probes"`
	ProbeP99ms      *float64 `json:"probe_first_step_p99_ms"`
}

// runBenchJSON runs cairn bench --json and decodes the one object it prints.
func runBenchJSON(t *testing.T, args ...string) benchFigures {
	t.Helper()
	r := runCairn(t, "", nil, append([]string{"bench", "--json"}, args...)...)
	require.Zero(t, r.code, "stderr: %s", r.stderr)
	out := strings.TrimSpace(r.stdout)
	require.Equal(t, 1, strings.Count(out, "\n")+1, "one line of JSON, got %q", out)
	var f benchFigures
	dec := json.NewDecoder(strings.NewReader(out))
	require.NoError(t, dec.Decode(&f), out)
	require.False(t, dec.More(), "exactly one JSON object: %q", out)
	for key, v := range map[string]*float64{"first_step_p50_ms": f.FirstStepP50ms, "first_step_p90_ms": f.FirstStepP90ms,
		"first_step_p99_ms": f.FirstStepP99ms, "finish_p50_ms": f.FinishP50ms, "finish_p99_ms": f.FinishP99ms} {
		require.NotNil(t, v, "key %s missing: %s", key, out)
		require.GreaterOrEqual(t, *v, 0.0, key)
	}
	require.LessOrEqual(t, *f.FirstStepP50ms, *f.FirstStepP90ms)
	require.LessOrEqual(t, *f.FirstStepP90ms, *f.FirstStepP99ms)
	require.LessOrEqual(t, *f.FinishP50ms, *f.FinishP99ms)
	return f
}

func TestBenchDrainsOnTheDefaultSQLiteFile(t *testing.T) {
	t.Parallel()
	f := runBenchJSON(t, "--count", "200")
	require.Equal(t, 200, f.Count)
	require.Equal(t, 200, f.Finished)
	require.Equal(t, 200, f.Steps, "bench.noop is one step")
	require.Positive(t, f.WorkflowsPerSec)
	require.Positive(t, f.StepsPerSec)
	require.Positive(t, f.Seconds)
}

// --cpuprofile writes a Go CPU profile of the drain (gzipped protocol buffers, as go tool pprof
// reads them) whose samples are the engine's work.
func TestBenchWritesACPUProfileOfTheDrain(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cpu.prof")
	f := runBenchJSON(t, "--count", "3000", "--cpuprofile", path)
	require.Equal(t, 3000, f.Finished)
	raw, err := os.Open(path)
	require.NoError(t, err)
	defer raw.Close()
	zr, err := gzip.NewReader(raw)
	require.NoError(t, err, "a profile is gzipped")
	body, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.Contains(t, string(body), "github.com/cairnflow/cairn/persistence.(*Store)", "the samples' functions are named in the profile")
}

// On a database it is given, bench leaves the tables and nothing else: no workflows, history,
// executors or definitions of its own.
func TestBenchOnPostgresLeavesOnlyTheTables(t *testing.T) {
	t.Parallel()
	benchLeavesOnlyTheTables(t, dbtest.URL(t, persistence.KindPostgres))
}

// The same on MariaDB/MySQL, which claims, completes and numbers change events its own way.
func TestBenchOnMySQLLeavesOnlyTheTables(t *testing.T) {
	t.Parallel()
	benchLeavesOnlyTheTables(t, dbtest.URL(t, persistence.KindMySQL))
}

func benchLeavesOnlyTheTables(t *testing.T, url string) {
	t.Helper()
	f := runBenchJSON(t, "--database", url, "--count", "200", "--definition", "demo.order", "--nodes", "2")
	require.Equal(t, 200, f.Count)
	require.Equal(t, 200, f.Finished)
	require.Equal(t, 600, f.Steps, "demo.order runs validate, charge and ship")
	require.Positive(t, f.WorkflowsPerSec)
	require.Positive(t, f.StepsPerSec)

	store := openStore(t, url)
	require.NoError(t, store.CheckSchema(context.Background()), "the tables stay")
	for _, table := range []string{"workflows", "actions", "task_instances", "side_effects", "change_events", "executors", "workflow_definitions"} {
		var n int
		require.NoError(t, store.DB().NewRaw("SELECT count(*) FROM "+table).Scan(context.Background(), &n))
		require.Zero(t, n, "rows left in %s", table)
	}
}

// --preload fills the database with ended workflows and their history before the run, and they
// stay; the run's own workflows are cleaned up as always.
func TestBenchPreloadsEndedWorkflows(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t, persistence.KindPostgres)
	f := runBenchJSON(t, "--database", url, "--preload", "300", "--count", "50", "--definition", "demo.order")
	require.Equal(t, 50, f.Finished)
	require.Equal(t, 150, f.Steps, "the preloaded history is not counted in the run")
	ctx := context.Background()
	store := openStore(t, url)
	count := func(q string) int {
		var n int
		require.NoError(t, store.DB().NewRaw(q).Scan(ctx, &n), q)
		return n
	}
	require.Equal(t, 300, count("SELECT count(*) FROM workflows WHERE status = 'FINISHED' AND state = 'done' AND type = 'demo.order'"))
	require.Equal(t, 900, count("SELECT count(*) FROM task_instances"), "validate, charge and ship for each")
	require.Equal(t, 900, count("SELECT count(*) FROM actions WHERE task_instance_id IS NOT NULL"))
	require.Equal(t, 1200, count("SELECT count(*) FROM change_events"), "created and one per step")
	require.Zero(t, count("SELECT count(*) FROM workflows w WHERE NOT EXISTS (SELECT 1 FROM actions a WHERE a.workflow_id = w.id)"))
}

func TestBenchStartsAtARateForADuration(t *testing.T) {
	t.Parallel()
	f := runBenchJSON(t, "--duration", "1s", "--rate", "200")
	require.Equal(t, 200, f.Count)
	require.Equal(t, 200, f.Finished)
	require.Positive(t, f.WorkflowsPerSec)
}

// cairn bench under flow control: the limits it sets hold the run's workflows and its probes (each
// of a key of its own), every one finishes, and the limits are cleared afterwards, on every backend.
func TestBenchUnderFlowControl(t *testing.T) {
	t.Parallel()
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			url := dbtest.URL(t, kind)
			f := runBenchJSON(t, "--database", url, "--count", "200", "--flow-keys", "10", "--flow-limit", "2",
				"--rate-limit", "2000/1s", "--probes", "5")
			require.Equal(t, 205, f.Count, "the run's workflows and the probes")
			require.Equal(t, 205, f.Finished)
			require.Equal(t, 5, f.Probes)
			require.NotNil(t, f.ProbeP99ms)
			var n int
			require.NoError(t, openStore(t, url).DB().NewRaw("SELECT count(*) FROM flow_controls").Scan(context.Background(), &n))
			require.Zero(t, n, "the run's flow control is cleared")
		})
	}
}

func TestBenchRejectsBadFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "give --count N or --duration D"},
		{[]string{"--count", "10", "--duration", "1s"}, "exclude each other"},
		{[]string{"--count", "-1"}, "--count must be positive"},
		{[]string{"--count", "10", "--preload", "-1"}, "--preload must be between 0 and 10000000"},
		{[]string{"--count", "10", "--preload", "10000001"}, "--preload must be between 0 and 10000000"},
		{[]string{"--count", "ten"}, "invalid value"},
		{[]string{"--duration", "1s", "--rate", "0"}, "--rate must be positive"},
		{[]string{"--count", "10", "--workers", "0"}, "--workers must be at least 1"},
		{[]string{"--count", "10", "--nodes", "0"}, "--nodes must be at least 1"},
		{[]string{"--count", "10", "--definition", "no.such"}, `unknown --definition "no.such"`},
		{[]string{"--count", "10", "--input", "[1]"}, "--input must be a JSON object"},
		{[]string{"--count", "10", "--database", "mysql://x"}, "mysql"},
		{[]string{"--count", "10", "--bogus"}, "flag provided but not defined"},
		{[]string{"--count", "10", "extra"}, `unexpected argument "extra"`},
		{[]string{"--count", "10", "--flow-scope", "ALL"}, "--flow-scope must be WORKFLOW or STEP"},
		{[]string{"--count", "10", "--rate-limit", "0/1s"}, "--rate-limit must be N/PERIOD"},
		{[]string{"--count", "10", "--rate-limit", "10/soon"}, "--rate-limit"},
		{[]string{"--count", "10", "--probes", "-1"}, "must not be negative"},
		{[]string{"--api", "http://127.0.0.1:1/graphql"}, "--api needs --count N"},
		{[]string{"--api", "http://127.0.0.1:1/graphql", "--count", "10", "--clients", "0"}, "--clients must be at least 1"},
		{[]string{"--api", "http://127.0.0.1:1/graphql", "--count", "10"}, "error reaching http://127.0.0.1:1/graphql"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			r := runCairn(t, "", nil, append([]string{"bench"}, tc.args...)...)
			requireOneLineError(t, r, tc.want)
			require.Empty(t, r.stdout)
		})
	}
	r := runCairn(t, "", []string{"CAIRN_COUNT=many"}, "bench")
	requireOneLineError(t, r, "CAIRN_COUNT")
}

// cairn bench --api starts its workflows through a running node's GraphQL API, one per request,
// on every backend, and waits for them to finish.
func TestBenchThroughTheAPI(t *testing.T) {
	t.Parallel()
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			url := dbtest.URL(t, kind)
			n := startNode(t, nil, "--database", url, "--demo", "--addr", "127.0.0.1:0", "--log-format", "json")
			r := runCairn(t, "", nil, "bench", "--json", "--api", "http://"+n.addr+"/graphql", "--count", "120", "--clients", "8", "--definition", "demo.order")
			require.Zero(t, r.code, "stderr: %s", r.stderr)
			var f struct {
				Count           int     `json:"count"`
				Started         int     `json:"started"`
				Failed          int     `json:"failed"`
				Finished        int     `json:"finished"`
				StartsPerSec    float64 `json:"starts_per_sec"`
				StartP50Ms      float64 `json:"start_p50_ms"`
				StartP99Ms      float64 `json:"start_p99_ms"`
				WorkflowsPerSec float64 `json:"workflows_per_sec"`
				EndToEndSeconds float64 `json:"end_to_end_seconds"`
				SeenSeconds     float64 `json:"seen_seconds"`
				BusinessKey     string  `json:"business_key"`
			}
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &f), r.stdout)
			require.Equal(t, 120, f.Count)
			require.Equal(t, 120, f.Started)
			require.Zero(t, f.Failed)
			require.Equal(t, 120, f.Finished)
			require.Positive(t, f.StartsPerSec)
			require.Positive(t, f.WorkflowsPerSec)
			require.LessOrEqual(t, f.StartP50Ms, f.StartP99Ms)

			store := openStore(t, url)
			var finished int
			require.NoError(t, store.DB().NewRaw("SELECT count(*) FROM workflows WHERE business_key = ? AND status = 'FINISHED' AND type = 'demo.order'", f.BusinessKey).
				Scan(context.Background(), &finished))
			require.Equal(t, 120, finished, "one workflow per request, every one finished")
			// End to end is the node's record: the first creation to the last end of the run's workflows.
			var span struct {
				First time.Time `bun:"first"`
				Last  time.Time `bun:"last"`
			}
			require.NoError(t, store.DB().NewRaw("SELECT min(created) AS first, max(finished) AS last FROM workflows WHERE business_key = ?", f.BusinessKey).
				Scan(context.Background(), &span))
			require.InDelta(t, span.Last.Sub(span.First).Seconds(), f.EndToEndSeconds, 0.002)
			require.InDelta(t, float64(f.Finished)/f.EndToEndSeconds, f.WorkflowsPerSec, 0.01*f.WorkflowsPerSec)
			require.Positive(t, f.SeenSeconds)
			require.Zero(t, n.stop(t), n.output())
		})
	}
}
