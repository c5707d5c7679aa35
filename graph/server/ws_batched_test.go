package server

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// countingConn counts the writes that reach the network.
type countingConn struct {
	net.Conn
	writes atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestBatchedConnSendsWritesInOrderAndInFewCalls: writes made while the peer does not read leave
// in one call once it reads, every byte in the order written.
func TestBatchedConnSendsWritesInOrderAndInFewCalls(t *testing.T) {
	server, client := net.Pipe()
	defer client.Close()
	counted := &countingConn{Conn: server}
	b := newBatchedConn(counted)
	var want bytes.Buffer
	for i := range 100 {
		msg := fmt.Sprintf("message %d;", i)
		want.WriteString(msg)
		n, err := b.Write([]byte(msg))
		require.NoError(t, err)
		require.Equal(t, len(msg), n)
	}
	got := make([]byte, want.Len())
	_, err := io.ReadFull(client, got)
	require.NoError(t, err)
	require.Equal(t, want.String(), string(got))
	// The first write may have left alone before the others came; the rest left together.
	require.LessOrEqual(t, counted.writes.Load(), int64(2))
	require.NoError(t, b.Close())
}

// TestBatchedConnHoldsWritersBeyondItsBound: a peer that does not read holds its writers back
// once maxBytes wait, rather than the node's memory; they go on when it reads.
func TestBatchedConnHoldsWritersBeyondItsBound(t *testing.T) {
	server, client := net.Pipe()
	defer client.Close()
	b := newBatchedConn(server)
	b.maxBytes = 16
	_, err := b.Write(bytes.Repeat([]byte("a"), 12))
	require.NoError(t, err)
	held := make(chan error, 1)
	go func() {
		_, err := b.Write(bytes.Repeat([]byte("b"), 12))
		held <- err
	}()
	select {
	case err := <-held:
		t.Fatalf("a write beyond the bound returned before the peer read (%v)", err)
	case <-time.After(200 * time.Millisecond):
	}
	got := make([]byte, 24)
	_, err = io.ReadFull(client, got)
	require.NoError(t, err)
	require.NoError(t, <-held)
	require.Equal(t, "aaaaaaaaaaaabbbbbbbbbbbb", string(got))
	require.NoError(t, b.Close())
}

// TestBatchedConnFailsWritesOnceASendFailed: once the network refuses a batch, every later write
// fails with its error; Close lets what is pending leave first.
func TestBatchedConnFailsWritesOnceASendFailed(t *testing.T) {
	server, client := net.Pipe()
	b := newBatchedConn(server)
	_, err := b.Write([]byte("last words"))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- b.Close() }()
	got, err := io.ReadAll(client)
	require.NoError(t, err)
	require.Equal(t, "last words", string(got), "Close sends what is pending, then closes")
	require.NoError(t, <-done)

	server, client = net.Pipe()
	b = newBatchedConn(server)
	require.NoError(t, client.Close())
	require.Eventually(t, func() bool {
		_, err := b.Write([]byte("x"))
		return err != nil
	}, 5*time.Second, 10*time.Millisecond)
	_, err = b.Write([]byte("y"))
	require.ErrorIs(t, err, io.ErrClosedPipe)
}
