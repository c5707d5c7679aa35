package graph

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph/internal/request"
)

// A field cut by the request timeout says so, with its own code, rather than a masked INTERNAL
// error; a cancellation for any other reason stays what it was.
func TestRequestTimeoutIsNamedInTheError(t *testing.T) {
	t.Parallel()
	present := errorPresenter(slog.New(slog.NewTextHandler(io.Discard, nil)), 90*time.Second)
	ctx, cancel := request.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	e := present(ctx, ctx.Err())
	require.Equal(t, request.CodeTimeout, e.Extensions["code"])
	require.Contains(t, e.Message, "request timeout (1m30s)")

	other, stop := context.WithCancel(context.Background())
	stop()
	e = present(other, other.Err())
	require.Equal(t, "INTERNAL", e.Extensions["code"])
}
