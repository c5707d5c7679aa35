package serverless_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// startGreeter serves testdata/greet.proto's Greeter on 127.0.0.1:0 with handlers built from the
// same compiled descriptors cairn reads: SayHello answers "hello <name>" with the request's tags
// and the metadata "authorization" it got; Refuse answers NOT_FOUND; Slow answers only once the
// call is given up. It returns the port.
func startGreeter(t *testing.T) int {
	t.Helper()
	comp := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{"testdata"}})}
	files, err := comp.Compile(context.Background(), "greet.proto")
	require.NoError(t, err)
	types := files.AsResolver()
	d, err := types.FindDescriptorByName("greet.v1.Greeter")
	require.NoError(t, err)
	sd := d.(protoreflect.ServiceDescriptor)
	handler := func(md protoreflect.MethodDescriptor) grpc.MethodDesc {
		return grpc.MethodDesc{MethodName: string(md.Name()), Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			req := dynamicpb.NewMessage(md.Input())
			if err := dec(req); err != nil {
				return nil, err
			}
			var in struct {
				Name  string   `json:"name"`
				Times int      `json:"times"`
				Tags  []string `json:"tags"`
			}
			js, _ := protojson.Marshal(req)
			_ = json.Unmarshal(js, &in)
			switch md.Name() {
			case "Refuse":
				return nil, status.Errorf(codes.NotFound, "no greeting for %s", in.Name)
			case "Slow":
				select {
				case <-ctx.Done(): // the call's deadline, as the server sees it: what a server answers then
					return nil, status.FromContextError(ctx.Err()).Err()
				case <-time.After(10 * time.Second):
					return nil, status.Error(codes.Unavailable, "gave up")
				}
			}
			meta, _ := metadata.FromIncomingContext(ctx)
			auth := strings.Join(meta.Get("authorization"), ",")
			out, _ := json.Marshal(map[string]any{"message": strings.TrimSpace(strings.Repeat("hello "+in.Name+" ", max(in.Times, 1))),
				"authorization": auth, "tags": in.Tags, "at": "2026-01-02T03:04:05Z"})
			resp := dynamicpb.NewMessage(md.Output())
			return resp, protojson.UnmarshalOptions{Resolver: types}.Unmarshal(out, resp)
		}}
	}
	desc := grpc.ServiceDesc{ServiceName: string(sd.FullName()), HandlerType: (*any)(nil)}
	for _, name := range []protoreflect.Name{"SayHello", "Refuse", "Slow"} {
		desc.Methods = append(desc.Methods, handler(sd.Methods().ByName(name)))
	}
	server := grpc.NewServer()
	server.RegisterService(&desc, struct{}{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = server.Serve(lis) }()
	t.Cleanup(server.Stop)
	return lis.Addr().(*net.TCPAddr).Port
}

// grpcDoc is a call: grpc of greet.v1.Greeter on localhost (the schema holds host and port to
// literals: a name and an integer).
func grpcDoc(name, proto, method string, port int) string {
	return fmt.Sprintf(`
document: {dsl: '1.0.3', namespace: grpc, name: %s, version: '1.0.0'}
do:
  - greet:
      call: grpc
      with:
        proto: {endpoint: '%s'}
        service:
          name: greet.v1.Greeter
          host: localhost
          port: %d
          authentication: {bearer: {token: '${ $secret.token }'}}
        method: %s
        arguments: {name: '${ .user.name }', times: '${ .n }', tags: ['${ $workflow.id | length > 0 | tostring }', b]}
`, name, proto, port, method)
}

// TestGrpcCall calls a gRPC server started in the test, its proto served over HTTP or read from
// the node's proto directory: a unary call's output (arguments from expressions, bearer
// authentication as metadata), and the faults of an unknown method or service, a status
// error, a proto that does not compile, a streaming method and arguments that do not fit.
func TestGrpcCall(t *testing.T) {
	t.Parallel()
	port := startGreeter(t)
	greet, err := os.ReadFile("testdata/greet.proto")
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /protos/greet.proto", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(greet) })
	mux.HandleFunc("GET /protos/private/greet.proto", func(w http.ResponseWriter, r *http.Request) {
		if user, pass, _ := r.BasicAuth(); user != "reader" || pass != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write(greet)
	})
	mux.HandleFunc("GET /protos/broken.proto", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("syntax = \"proto3\";\nservice Greeter { rpc SayHello(Missing) returns (Missing); }\n"))
	})
	protos := httptest.NewServer(mux)
	t.Cleanup(protos.Close)
	proto := protos.URL + "/protos/greet.proto"
	input := `{"user":{"name":"ann"},"n":2}`
	opts := serverless.Options{HTTP: serverless.HTTPOptions{Allow: []string{"localhost", "127.0.0.1"}}, Secrets: map[string]any{"token": "s3cret"},
		GRPC: serverless.GRPCOptions{ProtoDir: "testdata"}}

	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNodeWith(t, store, opts)
		n.startWorker(t)
		run := func(t *testing.T, doc, input string) *persistence.Workflow {
			def := n.deploy(t, doc)
			return n.waitEnded(t, n.start(t, def.Type, input).ID)
		}
		fault := func(t *testing.T, w *persistence.Workflow, typ string) map[string]any {
			t.Helper()
			require.Equal(t, persistence.StatusFailed, w.Status)
			p := problemFields(t, w)
			require.Equal(t, "https://serverlessworkflow.io/spec/1.0.0/errors/"+typ, p["type"], p)
			require.Equal(t, "/do/0/greet", p["instance"], p)
			return p
		}

		t.Run("a unary call's output", func(t *testing.T) {
			w := run(t, grpcDoc("hello", proto, "SayHello", port), input)
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			require.Equal(t, map[string]any{"message": "hello ann hello ann", "authorization": "Bearer [secret]", "tags": []any{"true", "b"},
				"at": "2026-01-02T03:04:05Z"}, output(t, w), "the server got the token as metadata; its echo of it is not stored")
			require.Equal(t, []string{"start", "/do/0/greet"}, statesRun(t, store, w.ID), "the call is one step")
		})
		t.Run("a proto from the node's directory, the service at a literal port", func(t *testing.T) {
			doc := fmt.Sprintf(`
document: {dsl: '1.0.3', namespace: grpc, name: file, version: '1.0.0'}
do:
  - greet:
      call: grpc
      with:
        proto: {endpoint: 'file://greet.proto'}
        service: {name: greet.v1.Greeter, host: localhost, port: %d}
        method: SayHello
        arguments: {name: '${ .name }'}
`, port)
			w := run(t, doc, `{"name":"bo"}`)
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			require.Equal(t, map[string]any{"message": "hello bo", "authorization": "", "tags": []any{}, "at": "2026-01-02T03:04:05Z"}, output(t, w))
		})
		t.Run("a proto behind basic authentication", func(t *testing.T) {
			private := fmt.Sprintf("{uri: '%s/protos/private/greet.proto', authentication: {basic: {username: reader, password: '${ $secret.token }'}}}", protos.URL)
			doc := strings.Replace(grpcDoc("private", "X", "SayHello", port), "'X'", private, 1)
			w := run(t, doc, input)
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			require.Equal(t, "hello ann hello ann", output(t, w).(map[string]any)["message"])
			p := fault(t, run(t, strings.Replace(doc, "reader", "stranger", 1), input), "communication")
			require.Equal(t, float64(401), p["status"])
		})
		t.Run("a method that does not exist faults", func(t *testing.T) {
			p := fault(t, run(t, grpcDoc("nomethod", proto, "SayGoodbye", port), input), "validation")
			require.Contains(t, p["detail"], `no method "SayGoodbye"`)
		})
		t.Run("a status error is a communication fault", func(t *testing.T) {
			p := fault(t, run(t, grpcDoc("refused", proto, "Refuse", port), input), "communication")
			require.Equal(t, float64(404), p["status"])
			require.Equal(t, "gRPC NotFound", p["title"])
			require.Contains(t, p["detail"], "no greeting for ann")
		})
		t.Run("a proto that does not compile faults", func(t *testing.T) {
			p := fault(t, run(t, grpcDoc("broken", protos.URL+"/protos/broken.proto", "SayHello", port), input), "validation")
			require.Contains(t, p["detail"], "does not compile")
			require.Contains(t, p["detail"], "Missing")
		})
		t.Run("a streaming method faults", func(t *testing.T) {
			p := fault(t, run(t, grpcDoc("stream", proto, "Chat", port), input), "validation")
			require.Contains(t, p["detail"], "unary methods only")
		})
		t.Run("arguments that do not fit the request faults", func(t *testing.T) {
			p := fault(t, run(t, grpcDoc("badargs", proto, "SayHello", port), strings.Replace(input, `"n":2`, `"n":"many"`, 1)), "validation")
			require.Contains(t, p["detail"], "greet.v1.HelloRequest")
		})
		t.Run("the task's timeout bounds the call", func(t *testing.T) {
			doc := strings.Replace(grpcDoc("slow", proto, "Slow", port), "      call: grpc\n", "      timeout: {after: {milliseconds: 300}}\n      call: grpc\n", 1)
			start := time.Now()
			p := fault(t, run(t, doc, input), "timeout")
			require.Contains(t, p["detail"], "before the task's deadline")
			require.Less(t, time.Since(start), 5*time.Second)
		})
		t.Run("a proto that is not there faults", func(t *testing.T) {
			p := fault(t, run(t, grpcDoc("missing", protos.URL+"/protos/none.proto", "SayHello", port), input), "communication")
			require.Equal(t, float64(404), p["status"])
		})
	})

	t.Run("the service is reached within the node's HTTP options: hosts and timeout", func(t *testing.T) {
		t.Parallel()
		// The proto is read from the directory: only the call itself meets the address check.
		n := newNodeWith(t, dbtest.Open(t, persistence.KindSQLite), serverless.Options{GRPC: serverless.GRPCOptions{ProtoDir: "testdata"}})
		n.startWorker(t)
		def := n.deploy(t, strings.Replace(grpcDoc("private", "file://greet.proto", "SayHello", port), "${ $secret.token }", "t", 1))
		w := n.waitEnded(t, n.start(t, def.Type, input).ID)
		require.Equal(t, persistence.StatusFailed, w.Status)
		p := problemFields(t, w)
		require.Equal(t, float64(403), p["status"], "a loopback service is refused by default: %v", p)
		require.Equal(t, "Address Not Allowed", p["title"])

		n = newNode(t, dbtest.Open(t, persistence.KindSQLite))
		n.startWorker(t)
		def = n.deploy(t, strings.Replace(grpcDoc("nodir", "file://greet.proto", "SayHello", port), "${ $secret.token }", "t", 1))
		w = n.waitEnded(t, n.start(t, def.Type, input).ID)
		require.Equal(t, persistence.StatusFailed, w.Status)
		require.Contains(t, problemFields(t, w)["detail"], "reads no proto files", "a node without a proto directory reads no file")

		n = newNodeWith(t, dbtest.Open(t, persistence.KindSQLite), serverless.Options{GRPC: serverless.GRPCOptions{ProtoDir: "testdata"},
			HTTP: serverless.HTTPOptions{Allow: []string{"localhost"}, Timeout: 200 * time.Millisecond}})
		n.startWorker(t)
		def = n.deploy(t, strings.Replace(grpcDoc("slow", "file://greet.proto", "Slow", port), "${ $secret.token }", "t", 1))
		w = n.waitEnded(t, n.start(t, def.Type, input).ID)
		require.Equal(t, persistence.StatusFailed, w.Status)
		p = problemFields(t, w)
		require.Equal(t, "https://serverlessworkflow.io/spec/1.0.0/errors/timeout", p["type"], p)
		require.Contains(t, p["detail"], "within 200ms (--http-timeout)")
	})
}

// TestGrpcDeploy deploys the specification's call: grpc example and refuses, at their pointer,
// the calls that cannot run.
func TestGrpcDeploy(t *testing.T) {
	t.Parallel()
	const header = "document: {dsl: '1.0.3', namespace: test, name: grpc, version: '0.1.0'}\ndo:\n  - greet:\n      call: grpc\n      with:\n"
	n := newNode(t, dbtest.Open(t, persistence.KindSQLite))
	_, err := n.engine.Deploy(context.Background(), header+`        proto:
          endpoint: file://app/greet.proto
        service:
          name: GreeterApi.Greeter
          host: localhost
          port: 5011
        method: SayHello
        arguments:
          name: ${ .user.preferredDisplayName }
`, "")
	require.NoError(t, err, "the specification's example deploys")

	const ok = "        proto: {endpoint: 'https://example.com/greet.proto'}\n        method: SayHello\n"
	for _, tc := range []struct{ name, with, field string }{
		{"no proto", "        service: {name: a.S, host: h}\n        method: M\n", "/do/0/greet/with/proto/endpoint"},
		{"a proto from ftp", "        proto: {endpoint: 'ftp://h/x.proto'}\n        service: {name: a.S, host: h}\n        method: M\n", "/do/0/greet/with/proto/endpoint"},
		{"no service", ok, "/do/0/greet/with/service"},
		{"a service name with a slash", ok + "        service: {name: a/S, host: h}\n", "/do/0/greet/with/service/name"},
		{"a host with a port", ok + "        service: {name: a.S, host: 'h:5'}\n", "/do/0/greet/with/service/host"},
		{"a port out of range", ok + "        service: {name: a.S, host: h, port: 70000}\n", "/do/0/greet/with/service/port"},
		{"no method", "        proto: {endpoint: 'https://example.com/greet.proto'}\n        service: {name: a.S, host: h}\n", "/do/0/greet/with/method"},
		{"arguments not an object", ok + "        service: {name: a.S, host: h}\n        arguments: [1]\n", "/do/0/greet/with/arguments"},
		{"a bad expression in the arguments", ok + "        service: {name: a.S, host: h}\n        arguments: {x: '${ .x + }'}\n", "/do/0/greet/with/arguments/x"},
		{"a named authentication", ok + "        service: {name: a.S, host: h, authentication: mine}\n", "/do/0/greet/with/service/authentication"},
		{"a named authentication of the proto", "        proto: {endpoint: {uri: 'https://example.com/greet.proto', authentication: mine}}\n        method: M\n        service: {name: a.S, host: h}\n", "/do/0/greet/with/proto/endpoint/authentication"},
		{"digest", ok + "        service: {name: a.S, host: h, authentication: {digest: {username: a, password: b}}}\n", "/do/0/greet/with/service/authentication/digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := n.engine.Deploy(context.Background(), header+tc.with, "")
			var we *workflow.Error
			require.ErrorAs(t, err, &we, "%v", err)
			require.Equal(t, workflow.CodeInvalidInput, we.Code, "%v", err)
			require.Equal(t, tc.field, we.Field, "%v", err)
		})
	}
}
