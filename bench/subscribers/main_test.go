package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/stretchr/testify/require"
)

// A websocket the node closes is counted in the figures, which are still printed: the load
// generator used to end at once with an error, without the figures of the other websockets. Its
// subscriptions count as ready (they will have no event): "ready" is printed, where it waited for
// them for ever.
func TestAClosedWebsocketIsCountedNotFatal(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A node of one websocket: it acknowledges, sends each subscription one event, and closes.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"graphql-transport-ws"}})
		if err != nil {
			return
		}
		defer conn.CloseNow()
		var m message
		if wsjson.Read(ctx, conn, &m) != nil || wsjson.Write(ctx, conn, message{Type: "connection_ack"}) != nil {
			return
		}
		for range 2 {
			if wsjson.Read(ctx, conn, &m) != nil {
				return
			}
		}
		// An event for subscription 0 only: subscription 1 never has one.
		event, _ := json.Marshal(map[string]any{"data": map[string]any{"workflowEvents": map[string]any{"at": time.Now()}}})
		for range 2 {
			if wsjson.Write(ctx, conn, message{ID: "0", Type: "next", Payload: event}) != nil {
				return
			}
		}
		_ = conn.Close(websocket.StatusPolicyViolation, "too slow")
	}))
	defer srv.Close()

	bin := filepath.Join(t.TempDir(), "subscribers")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(out))
	cmd := exec.CommandContext(ctx, bin, "-url", "ws"+strings.TrimPrefix(srv.URL, "http"), "-type", "t", "-subscriptions", "2", "-websockets", "1")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	errs := bufio.NewScanner(stderr)
	require.True(t, errs.Scan(), "a line on standard error when the websocket closes")
	require.Contains(t, errs.Text(), "websocket 0")
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	lines := bufio.NewScanner(stdout)
	require.True(t, lines.Scan())
	require.Equal(t, "subscribed", lines.Text())
	require.True(t, lines.Scan(), "ready, though subscription 1 never had an event")
	require.Equal(t, "ready", lines.Text())
	_, err = io.WriteString(stdin, "want 2\n")
	require.NoError(t, err)
	var last string
	for lines.Scan() {
		last = lines.Text()
	}
	require.NoError(t, cmd.Wait(), "the figures, not an error")
	var figures struct {
		Events, Errors, Closed, Want int
	}
	require.NoError(t, json.Unmarshal([]byte(last), &figures), last)
	require.Equal(t, 2, figures.Events, last)
	require.Equal(t, 1, figures.Closed, last)
	require.Zero(t, figures.Errors, last)
}
