package server_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// A client that upgrades and then says nothing, not even the answer to the close frame, is cut off
// soon after the init timeout: the websocket library alone would wait 5 s more for that answer.
func TestWebsocketInitTimeoutClosesASilentPeer(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		const initTimeout = 200 * time.Millisecond
		b := setup(t, store, func(c *server.Config) { c.InitTimeout = initTimeout })
		conn, err := net.Dial("tcp", strings.TrimPrefix(b.srv.URL, "http://"))
		require.NoError(t, err)
		defer conn.Close()
		_, err = io.WriteString(conn, "GET /graphql HTTP/1.1\r\nHost: "+strings.TrimPrefix(b.srv.URL, "http://")+"\r\n"+
			"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"+
			"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n")
		require.NoError(t, err)
		r := bufio.NewReader(conn)
		resp, err := http.ReadResponse(r, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)

		// The library's own wait for the answer is 5 s; the connection must end well before it.
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(initTimeout+3*time.Second)))
		frames, err := io.ReadAll(r)
		require.NoError(t, err, "the server closed the connection (not the client's deadline)")
		require.NotEmpty(t, frames, "the close frame came first")
	})
}
