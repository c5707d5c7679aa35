package tracing_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/internal/pool"
	"github.com/cairnflow/cairn/internal/tracing"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// span is what the test reads of an exported span.
type span struct {
	name, traceID, parentID string
	attrs                   map[string]string
}

// receiver is an in-process OTLP/HTTP collector: it decodes the protobuf export requests.
type receiver struct {
	mu    sync.Mutex
	spans []span
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil || req.URL.Path != "/v1/traces" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var export coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &export); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range export.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				attrs := map[string]string{}
				for _, a := range s.Attributes {
					attrs[a.Key] = strings.Trim(a.Value.String(), " ")
				}
				r.spans = append(r.spans, span{name: s.Name, traceID: hex.EncodeToString(s.TraceId), parentID: hex.EncodeToString(s.ParentSpanId), attrs: attrs})
			}
		}
	}
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

func (r *receiver) byName() map[string][]span {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]span{}
	for _, s := range r.spans {
		out[s.name] = append(out[s.name], s)
	}
	return out
}

func TestOffUnlessTheEnvironmentAsks(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	require.False(t, tracing.Requested())
	stop, err := tracing.Setup(context.Background(), "test")
	require.NoError(t, err)
	require.False(t, tracing.Enabled())
	require.NoError(t, stop(context.Background()))
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	require.True(t, tracing.Requested())
	t.Setenv("OTEL_SDK_DISABLED", "true")
	require.False(t, tracing.Requested())
}

// A traceparent on the request that starts a workflow makes the operation, the start, the steps
// and the remote task spans of that trace, exported over OTLP/HTTP; pollTasks hands the worker
// the trace.
func TestStartedWorkflowsJoinTheRequestsTrace(t *testing.T) {
	recv := &receiver{}
	collector := httptest.NewServer(recv)
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_SDK_DISABLED", "")
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			store := dbtest.Open(t, kind)
			ctx := context.Background()
			stop, err := tracing.Setup(ctx, "test")
			require.NoError(t, err)
			require.True(t, tracing.Enabled())
			stopped := false
			defer func() {
				if !stopped {
					_ = stop(ctx)
				}
			}()
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			eng := engine.New(store, engine.Options{Logger: log})
			_, err = eng.Register(ctx, workflow.Definition{Type: "t.traced", States: []workflow.State{
				{Name: "begin", Kind: workflow.Start, Next: []string{"end"}, Handler: func(workflow.StepContext) (workflow.Next, error) {
					return workflow.MoveTo("end"), nil
				}},
				{Name: "end", Kind: workflow.End},
			}})
			require.NoError(t, err)
			api := httptest.NewServer(server.New(server.Config{Engine: eng, Logger: log, AllowedHosts: []string{"127.0.0.1"}}))
			defer api.Close()

			traceID := "4bf92f3577b34da6a3ce929d0e0e4736"
			post := func(query string, vars map[string]any, traceparent string, out any) {
				body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
				require.NoError(t, err)
				req, err := http.NewRequest(http.MethodPost, api.URL+"/graphql", bytes.NewReader(body))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/json")
				if traceparent != "" {
					req.Header.Set("traceparent", traceparent)
				}
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				defer resp.Body.Close()
				var r struct {
					Data   json.RawMessage
					Errors []any
				}
				require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
				require.Empty(t, r.Errors)
				require.NoError(t, json.Unmarshal(r.Data, out))
			}
			var started struct {
				StartWorkflow struct{ Workflow struct{ ID string } }
			}
			post(`mutation Begin { startWorkflow(input: {type: "t.traced"}) { workflow { id } } }`, nil,
				"00-"+traceID+"-00f067aa0ba902b7-01", &started)

			w := pool.New(eng, pool.Options{Concurrency: 4, PollInterval: 50 * time.Millisecond, HeartbeatInterval: 500 * time.Millisecond,
				Expiry: 10 * time.Second, DrainTimeout: 5 * time.Second, Logger: log})
			runCtx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- w.Run(runCtx) }()
			deadline := time.Now().Add(60 * time.Second)
			for {
				page, _, err := store.WorkflowList(ctx, persistence.WorkflowListParams{Limit: 10})
				require.NoError(t, err)
				require.Len(t, page, 1)
				if page[0].Status == persistence.StatusFinished {
					// A remote task of the workflow: its worker is handed the trace.
					task := &persistence.RemoteTask{Function: "fx.trace", WorkflowID: page[0].ID, State: "end", ExecutorGroup: "default",
						Input: json.RawMessage(`{}`), MaxAttempts: 3}
					require.NoError(t, store.RemoteTaskCreate(ctx, task))
					break
				}
				require.True(t, time.Now().Before(deadline), "the workflow never finished")
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
			require.NoError(t, <-done)

			var polled struct {
				PollTasks struct {
					Tasks []struct{ Token, Traceparent string }
				}
			}
			post(`mutation { pollTasks(input: {functions: ["fx.trace"], worker: "w1"}) { tasks { token traceparent } } }`, nil, "", &polled)
			require.Len(t, polled.PollTasks.Tasks, 1)
			require.Regexp(t, `^00-`+traceID+`-[0-9a-f]{16}-01$`, polled.PollTasks.Tasks[0].Traceparent)
			var completed map[string]any
			post(`mutation($t: String!) { completeTask(input: {token: $t, output: 1}) { status } }`,
				map[string]any{"t": polled.PollTasks.Tasks[0].Token}, "", &completed)

			stopped = true
			require.NoError(t, stop(ctx)) // flushes
			spans := recv.byName()
			for _, name := range []string{"graphql.mutation Begin", "cairn.start t.traced", "cairn.step t.traced/begin", "cairn.remote fx.trace"} {
				require.NotEmpty(t, spans[name], "a %q span (got %v)", name, spans)
				found := false
				for _, s := range spans[name] {
					found = found || s.traceID == traceID
				}
				require.True(t, found, "the %q span is in the request's trace", name)
			}
			step := spans["cairn.step t.traced/begin"][len(spans["cairn.step t.traced/begin"])-1]
			require.Contains(t, step.attrs["cairn.outcome"], "SUCCEEDED")
			require.Contains(t, step.attrs["cairn.state"], "begin")
			recv.mu.Lock()
			recv.spans = nil
			recv.mu.Unlock()
		})
	}
}
