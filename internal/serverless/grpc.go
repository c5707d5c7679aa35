package serverless

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
	"github.com/bufbuild/protocompile"
	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// GRPCOptions bound `call: grpc` tasks beyond what HTTPOptions already bound (the hosts a call
// may reach, its timeout, the size of what it reads).
type GRPCOptions struct {
	// ProtoDir is the directory a `file:` proto endpoint is read from: file://app/greet.proto is
	// <ProtoDir>/app/greet.proto, and nothing outside it is read. Empty: a call whose proto is a
	// file faults.
	ProtoDir string
}

// grpcTLSPort is the port a call: grpc without a port dials, and the one it dials with TLS;
// another port is dialled in plaintext (HTTP/2 without TLS).
const grpcTLSPort = 443

// grpcCall is a compiled `call: grpc`: the proto is read when the task runs (like the document
// of a call: openapi), its service's method called with the task's arguments.
type grpcCall struct {
	proto     string    // the proto's URI
	protoFile string    // a file: proto, its path under GRPCOptions.ProtoDir
	protoAuth *httpCall // the proto's fetch (http and https)
	service   string    // the service's full name (package.Service)
	method    string
	host      string
	port      int
	arguments *template // nil: an empty request
	auth      *httpCall // the call's authentication, sent as the metadata "authorization"
}

func (c *compiler) compileGRPC(t *task, def map[string]any, sc scope) error {
	t.kind = kindGRPC
	ptr := t.path + "/with"
	with, ok := def["with"].(map[string]any)
	if !ok {
		return faultAt(ptr, "call: grpc needs with (proto, service, method)")
	}
	g := &grpcCall{protoAuth: &httpCall{}, auth: &httpCall{}}
	proto, _ := with["proto"].(map[string]any)
	pptr := ptr + "/proto/endpoint"
	endpoint := proto["endpoint"]
	if m, ok := endpoint.(map[string]any); ok {
		endpoint = m["uri"]
		switch auth := m["authentication"].(type) {
		case nil:
		case map[string]any:
			if err := c.compileAuth(g.protoAuth, auth, sc, pptr+"/authentication"); err != nil {
				return err
			}
		default:
			return faultAt(pptr+"/authentication", "authentication must be an object: a scheme, or use and the name of one in use.authentications")
		}
		pptr += "/uri"
	}
	g.proto, _ = endpoint.(string)
	u, err := url.Parse(g.proto)
	switch {
	case g.proto == "" || err != nil:
		return faultAt(pptr, "call: grpc needs the http, https or file URI of its proto")
	case u.Scheme == "http" || u.Scheme == "https":
		if u.Host == "" {
			return faultAt(pptr, "%q has no host", g.proto)
		}
	case u.Scheme == "file":
		// file://app/greet.proto names app/greet.proto: the host, if any, is the first segment.
		g.protoFile = strings.TrimPrefix(path.Clean("/"+u.Host+u.Path), "/")
		if u.Opaque != "" || g.protoFile == "" || !fs.ValidPath(g.protoFile) {
			return faultAt(pptr, "%q names no file", g.proto)
		}
	default:
		return faultAt(pptr, "call: grpc reads its proto from an http, https or file URI, not %q", g.proto)
	}
	svc, ok := with["service"].(map[string]any)
	if !ok {
		return faultAt(ptr+"/service", "call: grpc needs service (name, host)")
	}
	if g.service, _ = svc["name"].(string); !protoreflect.FullName(g.service).IsValid() {
		return faultAt(ptr+"/service/name", "call: grpc needs the full name of its service (package.Service)")
	}
	if g.method, _ = with["method"].(string); !protoreflect.Name(g.method).IsValid() {
		return faultAt(ptr+"/method", "call: grpc needs the name of the method to call")
	}
	// The schema holds the host to a name (no runtime expression) and the port to an integer.
	if g.host, _ = svc["host"].(string); g.host == "" || strings.ContainsAny(g.host, "/@?#:% ") {
		return faultAt(ptr+"/service/host", "call: grpc needs the host name of its service (without scheme or port)")
	}
	g.port = grpcTLSPort
	if p, ok := svc["port"]; ok {
		f, _ := p.(float64)
		if f != math.Trunc(f) || f < 1 || f > 65535 {
			return faultAt(ptr+"/service/port", "the port must be an integer from 1 to 65535")
		}
		g.port = int(f)
	}
	switch auth := svc["authentication"].(type) {
	case nil:
	case map[string]any:
		if err := c.compileAuth(g.auth, auth, sc, ptr+"/service/authentication"); err != nil {
			return err
		}
	default:
		return faultAt(ptr+"/service/authentication", "authentication must be an object: a scheme, or use and the name of one in use.authentications")
	}
	if a, ok := with["arguments"]; ok {
		if _, isMap := a.(map[string]any); !isMap {
			return faultAt(ptr+"/arguments", "arguments must be an object of the request message's fields")
		}
		if g.arguments, err = compileTemplate(a, sc, ptr+"/arguments"); err != nil {
			return err
		}
	}
	t.grpc = g
	return nil
}

// callGRPC reads the task's proto, finds its method and calls it once.
func (r *run) callGRPC(t *task, in any) (any, *Problem) {
	g := t.grpc
	invalid := func(format string, args ...any) *Problem {
		return &Problem{Type: errTypeValidation, Status: 400, Title: "Invalid gRPC Call", Detail: clip(fmt.Sprintf(format, args...)), Instance: t.path}
	}
	raw, p := r.readProto(t, in)
	if p != nil {
		return nil, p
	}
	name := path.Base(g.protoFile)
	if g.protoFile == "" {
		u, _ := url.Parse(g.proto)
		if name = path.Base(u.Path); name == "." || name == "/" {
			name = "service.proto"
		}
	}
	comp := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{name: string(raw)})})}
	files, err := comp.Compile(r.ctx, name)
	if err != nil {
		return nil, invalid("the proto at %s does not compile: %v", g.proto, err)
	}
	types := files.AsResolver()
	d, _ := types.FindDescriptorByName(protoreflect.FullName(g.service))
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, invalid("the proto at %s has no service %q", g.proto, g.service)
	}
	md := sd.Methods().ByName(protoreflect.Name(g.method))
	if md == nil {
		return nil, invalid("service %s has no method %q", g.service, g.method)
	}
	if md.IsStreamingClient() || md.IsStreamingServer() {
		return nil, invalid("method %s.%s streams; cairn calls unary methods only", g.service, g.method)
	}
	// The authentication first: the arguments may read it as $authorization.
	auth := &httpRequest{}
	if p := r.evalAuth(t, g.auth, in, auth); p != nil {
		return nil, p
	}
	r.authorize(auth)
	req := dynamicpb.NewMessage(md.Input())
	if g.arguments != nil {
		args, p := r.evalTpl(t, g.arguments, in, nil)
		if p != nil {
			return nil, p
		}
		js, err := json.Marshal(args)
		if err != nil {
			return nil, invalid("the arguments: %v", err)
		}
		if err := (protojson.UnmarshalOptions{Resolver: types}).Unmarshal(js, req); err != nil {
			return nil, invalid("the arguments do not fit %s: %v", md.Input().FullName(), err)
		}
	}
	resp := dynamicpb.NewMessage(md.Output())
	if p := r.invokeGRPC(t, g.host, g.port, "/"+string(sd.FullName())+"/"+string(md.Name()), auth, req, resp); p != nil {
		return nil, p
	}
	js, err := (protojson.MarshalOptions{Resolver: types, EmitUnpopulated: true}).Marshal(resp)
	if err != nil {
		return nil, &Problem{Type: errTypeCommunication, Status: 502, Title: "Invalid gRPC Response", Detail: clip(err.Error()), Instance: t.path}
	}
	if max := r.prog.http.opts.MaxResponseBytes; int64(len(js)) > max {
		return nil, &Problem{Type: errTypeCommunication, Status: 502, Title: "gRPC Response Too Large", Instance: t.path,
			Detail: fmt.Sprintf("the response is larger than %d bytes as JSON", max)}
	}
	var out any
	if err := json.Unmarshal(js, &out); err != nil {
		return nil, &Problem{Type: errTypeCommunication, Status: 502, Title: "Invalid gRPC Response", Detail: clip(err.Error()), Instance: t.path}
	}
	return out, nil
}

// readProto reads the task's proto: over HTTP within the node's HTTP options (as call: openapi
// reads its document), or from the node's proto directory.
func (r *run) readProto(t *task, in any) ([]byte, *Problem) {
	g := t.grpc
	if g.protoFile == "" {
		u, _ := url.Parse(g.proto)
		return r.fetchResource(t, u, "text/plain, */*", g.protoAuth, in, "Proto")
	}
	unavailable := func(status int, detail string) *Problem {
		return &Problem{Type: errTypeRuntime, Status: status, Title: "Proto Unavailable", Detail: detail, Instance: t.path}
	}
	dir := r.prog.grpc.ProtoDir
	if dir == "" {
		return nil, unavailable(503, fmt.Sprintf("%s is a file and this node reads no proto files (start it with --grpc-proto-dir)", g.proto))
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, unavailable(503, "the node's proto directory cannot be opened")
	}
	defer root.Close()
	f, err := root.Open(g.protoFile)
	if err != nil {
		return nil, unavailable(404, fmt.Sprintf("%s: no such file in the node's proto directory", g.proto))
	}
	defer f.Close()
	max := r.prog.http.opts.MaxResponseBytes
	raw, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, unavailable(500, fmt.Sprintf("%s cannot be read", g.proto))
	}
	if int64(len(raw)) > max {
		return nil, unavailable(413, fmt.Sprintf("%s is larger than %d bytes", g.proto, max))
	}
	return raw, nil
}

// grpcGuard refuses, at dial time, private, loopback, link-local and reserved addresses.
var grpcGuard = ssrf.New(ssrf.WithAnyPort())

// invokeGRPC makes one unary call within the node's HTTP options: the hosts it may reach, the
// time it may take (and the task's deadline), the size of the response.
func (r *run) invokeGRPC(t *task, host string, port int, method string, auth *httpRequest, req, resp *dynamicpb.Message) *Problem {
	opts := r.prog.http.opts
	fail := func(typ string, status int, title, detail string) *Problem {
		return &Problem{Type: typ, Status: status, Title: title, Detail: clip(detail), Instance: t.path}
	}
	if err := opts.check(host); err != nil {
		return fail(errTypeCommunication, 403, "Host Not Allowed", err.Error())
	}
	allowPrivate := opts.allowedByName(host)
	var refused atomic.Bool
	dialer := &net.Dialer{Timeout: 10 * time.Second,
		ControlContext: func(ctx context.Context, network, address string, c syscall.RawConn) error {
			if allowPrivate {
				return nil
			}
			if err := grpcGuard.Safe(network, address, c); err != nil {
				refused.Store(true)
				return fmt.Errorf("%w: %w", errAddressRefused, err)
			}
			return nil
		}}
	creds := insecure.NewCredentials()
	if port == grpcTLSPort {
		creds = credentials.NewTLS(&tls.Config{ServerName: host, MinVersion: tls.VersionTLS12})
	}
	target := net.JoinHostPort(host, strconv.Itoa(port))
	conn, err := grpc.NewClient("passthrough:///"+target, grpc.WithTransportCredentials(creds), grpc.WithNoProxy(),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) { return dialer.DialContext(ctx, "tcp", addr) }),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(int(min(opts.MaxResponseBytes, math.MaxInt32)))))
	if err != nil {
		return fail(errTypeValidation, 400, "Invalid gRPC Service", err.Error())
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(r.ctx, opts.Timeout)
	defer cancel()
	// The nearer of the task's deadline and --http-timeout bounds the call; the server learns it
	// too (grpc-timeout), and may give up a moment before this side does.
	deadline, _ := ctx.Deadline()
	taskDeadline, bound := r.ctx.Deadline()
	bound = bound && !taskDeadline.After(deadline)
	switch {
	case auth.basic:
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Basic "+basicParameter(auth.user, auth.password))
	case auth.bearer != "":
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+auth.bearer)
	}
	err = conn.Invoke(ctx, method, req, resp)
	if err == nil {
		return nil
	}
	st := status.Convert(err)
	switch {
	case refused.Load():
		return fail(errTypeCommunication, 403, "Address Not Allowed",
			fmt.Sprintf("host %s resolves to a private, loopback, link-local or reserved address; allow the host by name with --http-allow", host))
	case st.Code() == codes.DeadlineExceeded && time.Until(deadline) < time.Second && bound:
		return fail(errTypeTimeout, 408, "gRPC Timeout", fmt.Sprintf("%s%s did not complete before the task's deadline", target, method))
	case st.Code() == codes.DeadlineExceeded && time.Until(deadline) < time.Second:
		return fail(errTypeTimeout, 408, "gRPC Timeout", fmt.Sprintf("%s%s did not complete within %s (--http-timeout)", target, method, opts.Timeout))
	case st.Code() == codes.DeadlineExceeded:
		return fail(errTypeTimeout, 408, "gRPC Timeout", fmt.Sprintf("%s%s: the service answered DeadlineExceeded: %s", target, method, st.Message()))
	}
	return fail(errTypeCommunication, runtime.HTTPStatusFromCode(st.Code()), "gRPC "+st.Code().String(),
		fmt.Sprintf("%s%s: status %s (%d): %s", target, method, st.Code(), st.Code(), st.Message()))
}

// clip shortens a detail to 512 bytes.
func clip(s string) string {
	if len(s) > 512 {
		return s[:512] + "…"
	}
	return s
}
