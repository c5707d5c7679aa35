package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/cairnflow/cairn/persistence/dbtest"
)

const chargeProto = `syntax = "proto3";
package shop;
service Payments { rpc Charge(ChargeRequest) returns (ChargeReply); }
message ChargeRequest { int32 amount = 1; }
message ChargeReply { bool charged = 1; int32 amount = 2; }
`

// startPayments serves shop.Payments on 127.0.0.1:0, built from chargeProto: Charge hangs on its
// first call until the caller goes away, then answers {charged: true, amount}. It returns the port
// and the count of calls.
func startPayments(t *testing.T) (int, *atomic.Int32) {
	t.Helper()
	comp := protocompile.Compiler{Resolver: &protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(map[string]string{"shop.proto": chargeProto})}}
	files, err := comp.Compile(context.Background(), "shop.proto")
	require.NoError(t, err)
	md := files[0].Services().ByName("Payments").Methods().ByName("Charge")
	var calls atomic.Int32
	desc := grpc.ServiceDesc{ServiceName: "shop.Payments", HandlerType: (*any)(nil), Methods: []grpc.MethodDesc{{MethodName: "Charge",
		Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			req := dynamicpb.NewMessage(md.Input())
			if err := dec(req); err != nil {
				return nil, err
			}
			if calls.Add(1) == 1 {
				<-ctx.Done() // the first call hangs until its node dies
				return nil, ctx.Err()
			}
			resp := dynamicpb.NewMessage(md.Output())
			resp.Set(md.Output().Fields().ByName("charged"), protoreflect.ValueOfBool(true))
			resp.Set(md.Output().Fields().ByName("amount"), req.Get(md.Input().Fields().ByName("amount")))
			return resp, nil
		}}}}
	server := grpc.NewServer()
	server.RegisterService(&desc, struct{}{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = server.Serve(lis) }()
	t.Cleanup(server.Stop)
	return lis.Addr().(*net.TCPAddr).Port, &calls
}

// TestNodeKilledDuringGrpcCall kills a node (SIGKILL) while a deployed workflow's call: grpc task
// waits for its response; another node takes the workflow over, makes the call again (delivery is
// at least once) and finishes it with the response as the task's output.
func TestNodeKilledDuringGrpcCall(t *testing.T) {
	t.Parallel()
	protos := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(chargeProto)) }))
	t.Cleanup(protos.Close)
	for _, kind := range dbtest.Backends {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			port, calls := startPayments(t)
			url := dbtest.URL(t, kind)
			args := []string{"--database", url, "--addr", "127.0.0.1:0", "--log-format", "json", "--http-allow", "127.0.0.1,localhost",
				"--heartbeat-interval", "200ms", "--executor-expiry", "2s"}
			first := startNode(t, nil, args...)
			var deployed struct {
				DeployDefinition struct{ Definition struct{ Type string } }
			}
			first.graphql(t, deployMutation, map[string]any{"source": "document: {dsl: '1.0.3', namespace: shop, name: grpc-charge, version: '1.0.0'}\n" +
				"do:\n  - charge:\n      call: grpc\n      with:\n        proto: {endpoint: '" + protos.URL + "/shop.proto'}\n" +
				"        service: {name: shop.Payments, host: localhost, port: " + strconv.Itoa(port) + "}\n" +
				"        method: Charge\n        arguments: {amount: '${ .amount }'}\n"}, &deployed)
			id := first.startWith(t, "shop.grpc-charge", map[string]any{"amount": 5})
			waitFor(t, 30*time.Second, "the first call", func() bool { return calls.Load() >= 1 })
			require.NoError(t, first.cmd.Process.Kill())
			<-first.exited

			second := startNode(t, nil, args...)
			require.Equal(t, map[string]any{"charged": true, "amount": float64(5)}, second.finishedOutput(t, id))
			require.Equal(t, int32(2), calls.Load(), "the call was made again after the node died")
			require.Zero(t, second.stop(t), second.output())
		})
	}
}
