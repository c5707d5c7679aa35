package tracing

import (
	"os"

	"go.opentelemetry.io/otel/attribute"
)

// semconvService names the service cairn (unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES
// name it, which resource.Default reads) and its version.
func semconvService(version string) []attribute.KeyValue {
	out := []attribute.KeyValue{attribute.String("service.version", version)}
	if os.Getenv("OTEL_SERVICE_NAME") == "" {
		out = append(out, attribute.String("service.name", "cairn"))
	}
	return out
}
