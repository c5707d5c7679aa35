// Package tracing is cairn's OpenTelemetry tracing: on when the standard environment asks for an
// OTLP exporter, a no-op otherwise. The rest of cairn calls Tracer, Traceparent and ContextOf,
// which cost nothing while tracing is off.
package tracing

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Name is the instrumentation scope of cairn's spans.
const Name = "github.com/cairnflow/cairn"

var (
	enabled atomic.Bool
	// propagator reads and writes W3C traceparent headers (set whatever the global one is).
	propagator = propagation.TraceContext{}
)

// Enabled reports whether tracing is on (Setup installed an exporter).
func Enabled() bool { return enabled.Load() }

// Tracer returns cairn's tracer: the global provider's, a no-op while tracing is off.
func Tracer() trace.Tracer {
	if !enabled.Load() {
		return noop.NewTracerProvider().Tracer(Name)
	}
	return otel.Tracer(Name)
}

// Requested reports whether the standard environment asks for OTLP traces: an OTLP endpoint, or
// OTEL_TRACES_EXPORTER=otlp (OTEL_SDK_DISABLED=true turns it off).
func Requested() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	exporter := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER"))
	if exporter == "none" {
		return false
	}
	return exporter == "otlp" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup installs an OTLP exporter (over HTTP, or gRPC when OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or
// OTEL_EXPORTER_OTLP_PROTOCOL says grpc) as the global tracer provider when Requested, configured
// by the standard OTEL_* variables (endpoint, headers, sampler, service name). It returns the
// function that flushes and stops it (a no-op when tracing stays off).
func Setup(ctx context.Context, version string) (shutdown func(context.Context) error, err error) {
	if !Requested() {
		return func(context.Context) error { return nil }, nil
	}
	protocol := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exp sdktrace.SpanExporter
	switch protocol {
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	default:
		return nil, fmt.Errorf("cairn: OTLP protocol %q is not supported (http/protobuf or grpc)", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("error creating the OTLP trace exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconvService(version)...))
	if err != nil {
		res = resource.Default()
	}
	// The sampler comes from OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (the SDK reads them).
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	enabled.Store(true)
	return func(ctx context.Context) error {
		enabled.Store(false)
		otel.SetTracerProvider(noop.NewTracerProvider())
		return tp.Shutdown(ctx)
	}, nil
}

// Traceparent returns the W3C traceparent of the span in ctx ("" when there is none).
func Traceparent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	carrier := propagation.MapCarrier{}
	propagator.Inject(ctx, carrier)
	return carrier.Get("traceparent")
}

// ContextOf returns ctx with the remote span of a stored traceparent as its parent ("" or an
// invalid one: ctx unchanged).
func ContextOf(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagator.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// Extract returns ctx with the span context of a request's traceparent header (if any) as its
// remote parent.
func Extract(ctx context.Context, header propagation.TextMapCarrier) context.Context {
	return propagator.Extract(ctx, header)
}
