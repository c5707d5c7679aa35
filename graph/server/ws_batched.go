package server

import (
	"net"
	"runtime"
	"sync"
	"time"
)

// batchedConn is a websocket's network connection whose writes leave in batches. The websocket
// library writes and flushes each message on its own, one system call each, under its write lock:
// a connection carrying a hundred subscriptions made a hundred calls for one event. Here a write
// joins the bytes waiting to leave and returns; one goroutine sends what has gathered, in one
// call, for as long as there is some. A message leaves as soon as the one before it has left, so
// a lone message waits for nothing, and a burst leaves in a few calls.
type batchedConn struct {
	net.Conn

	mu       sync.Mutex
	drained  *sync.Cond // signalled when a batch has left (or failed)
	pending  []byte     // waiting to leave
	leaving  int        // bytes of the batch being written
	spare    []byte     // the last batch's buffer, for the next
	sending  bool       // a goroutine is sending
	err      error      // the first failed send: every later write fails with it
	maxBytes int        // a write waits while this much is held (pending or being written)
}

// held is how many bytes have not left yet (b.mu held).
func (b *batchedConn) held() int { return len(b.pending) + b.leaving }

// maxBatchedBytes bounds the bytes a connection holds that have not left: a write waits beyond it
// (a peer that does not read holds its writers back as it did before, not the node's memory).
const maxBatchedBytes = 1 << 20

// closeFlushGrace bounds how long Close waits for the pending bytes to leave.
const closeFlushGrace = 100 * time.Millisecond

func newBatchedConn(c net.Conn) *batchedConn {
	b := &batchedConn{Conn: c, maxBytes: maxBatchedBytes}
	b.drained = sync.NewCond(&b.mu)
	return b
}

// Write queues p to leave; it fails once a send has failed.
func (b *batchedConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.err == nil && b.held() > 0 && b.held()+len(p) > b.maxBytes {
		b.drained.Wait()
	}
	if b.err != nil {
		return 0, b.err
	}
	if b.pending == nil {
		b.pending = batchBuffers.get()
	}
	b.pending = append(b.pending, p...)
	if !b.sending {
		b.sending = true
		go b.send()
	}
	return len(p), nil
}

// send writes the pending bytes until none is left, a batch at a time.
func (b *batchedConn) send() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.pending) > 0 && b.err == nil {
		// The goroutines that run now (others of the connection's subscriptions, woken by the
		// same event) add theirs first: one call carries them all.
		b.mu.Unlock()
		runtime.Gosched()
		b.mu.Lock()
		batch := b.pending
		b.pending = b.spare[:0]
		b.leaving = len(batch)
		b.mu.Unlock()
		_, err := b.Conn.Write(batch)
		b.mu.Lock()
		b.leaving = 0
		if cap(batch) <= b.maxBytes {
			b.spare = batch[:0]
		}
		if err != nil {
			b.err = err
		}
		b.drained.Broadcast()
	}
	// Idle, the connection gives its buffers back for any connection's next burst: kept, they
	// would be grown again from nothing at each burst; pooled, the idle ones are the collector's.
	batchBuffers.put(b.pending)
	batchBuffers.put(b.spare)
	b.pending, b.spare = nil, nil
	b.sending = false
	b.drained.Broadcast()
}

// Close lets what is pending leave (for at most closeFlushGrace: a peer that does not read is not
// waited for), then closes the connection.
func (b *batchedConn) Close() error {
	stop := time.AfterFunc(closeFlushGrace, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.err == nil {
			b.err = net.ErrClosed
		}
		b.drained.Broadcast()
	})
	defer stop.Stop()
	b.mu.Lock()
	for b.sending && b.err == nil {
		b.drained.Wait()
	}
	b.mu.Unlock()
	return b.Conn.Close()
}

// batchBuffers holds the buffers of idle connections.
var batchBuffers = &bytePool{initial: 4096, max: maxBatchedBytes}

// bytePool is a pool of byte buffers: get returns an empty one, with the room an earlier use gave
// it when the pool has one; put keeps one for later unless it is nil or larger than max.
type bytePool struct {
	pool         sync.Pool
	initial, max int
}

func (p *bytePool) get() []byte {
	if b, ok := p.pool.Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return make([]byte, 0, p.initial)
}

func (p *bytePool) put(b []byte) {
	if cap(b) == 0 || cap(b) > p.max {
		return
	}
	b = b[:0]
	p.pool.Put(&b)
}
