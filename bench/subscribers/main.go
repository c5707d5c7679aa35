// Command subscribers is a load generator for a node's live subscriptions: it opens websockets to
// a node's GraphQL endpoint (graphql-transport-ws), runs workflowEvents subscriptions filtered to
// one workflow type on them, and measures each event's delay from its time (`at`) to its
// arrival. It runs as a process of its own, so that its cost can be told apart from the node's.
//
//	go run ./bench/subscribers -url ws://127.0.0.1:8080/graphql -type demo.order -subscriptions 10000 -websockets 100
//
// It prints "subscribed" once every subscription is sent and "ready" once every one has had an
// event. Then it reads commands from its standard input: "go" forgets what it measured so far,
// "want N" waits (30 s at most) until N events arrived since then and prints the figures as one
// JSON line, and ends. At the end of its input it prints the figures and ends. A websocket the
// node closes (a subscriber too slow for it, say) is counted in the figures ("closed") and named
// on standard error; its subscriptions have no more events, and count as ready.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
)

type message struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

type next struct {
	Data struct {
		WorkflowEvents *struct {
			At time.Time `json:"at"`
		} `json:"workflowEvents"`
	} `json:"data"`
	Errors []json.RawMessage `json:"errors"`
}

const query = `subscription($f: WorkflowFilter) { workflowEvents(filter: $f) { cursor type at status workflowId } }`

// figures is what the subscriptions measured since the last "go".
type figures struct {
	mu      sync.Mutex
	delays  []time.Duration
	errors  int
	closed  int             // websockets the node closed
	firstOf map[string]bool // subscriptions (socket/id) that had an event, or whose websocket closed
	arrived chan struct{}   // pinged at each event
}

func (f *figures) add(sub string, d time.Duration, failed bool) {
	f.mu.Lock()
	if failed {
		f.errors++
	} else {
		f.delays = append(f.delays, d)
	}
	f.firstOf[sub] = true
	f.mu.Unlock()
	f.ping()
}

// socketClosed records a websocket the node closed, its subs subscriptions ready (they will have
// no event).
func (f *figures) socketClosed(socket string, subs int) {
	f.mu.Lock()
	f.closed++
	for i := range subs {
		f.firstOf[socket+"/"+strconv.Itoa(i)] = true
	}
	f.mu.Unlock()
	f.ping()
}

// ping tells the waiter for "ready" that a subscription may have become ready.
func (f *figures) ping() {
	select {
	case f.arrived <- struct{}{}:
	default:
	}
}

func main() {
	url := flag.String("url", "ws://127.0.0.1:8080/graphql", "the node's GraphQL websocket endpoint")
	token := flag.String("token", "", "a bearer token, if the node asks for one")
	typ := flag.String("type", "", "the workflow type the subscriptions follow")
	subs := flag.Int("subscriptions", 1000, "how many subscriptions in all")
	sockets := flag.Int("websockets", 10, "how many websockets they share")
	flag.Parse()
	if *typ == "" || *subs <= 0 || *sockets <= 0 || *sockets > *subs {
		fmt.Fprintln(os.Stderr, "subscribers: -type is required; 0 < -websockets <= -subscriptions")
		os.Exit(2)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &figures{firstOf: map[string]bool{}, arrived: make(chan struct{}, 1)}
	vars, _ := json.Marshal(map[string]any{"query": query, "variables": map[string]any{"f": map[string]any{"types": []string{*typ}}}})
	for s := range *sockets {
		h := http.Header{}
		if *token != "" {
			h.Set("Authorization", "Bearer "+*token)
		}
		conn, _, err := websocket.Dial(ctx, *url, &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: h})
		if err != nil {
			fail(err)
		}
		conn.SetReadLimit(1 << 20)
		if err := wsjson.Write(ctx, conn, message{Type: "connection_init"}); err != nil {
			fail(err)
		}
		var ack message
		if err := wsjson.Read(ctx, conn, &ack); err != nil || ack.Type != "connection_ack" {
			fail(fmt.Errorf("no connection_ack: %v %s", err, ack.Type))
		}
		n := *subs / *sockets
		if s < *subs%*sockets {
			n++
		}
		for i := range n {
			if err := wsjson.Write(ctx, conn, message{ID: strconv.Itoa(i), Type: "subscribe", Payload: vars}); err != nil {
				fail(err)
			}
		}
		go read(ctx, conn, strconv.Itoa(s), n, f)
	}
	fmt.Println("subscribed")
	go func() {
		for range f.arrived {
			f.mu.Lock()
			all := len(f.firstOf) == *subs
			f.mu.Unlock()
			if all {
				fmt.Println("ready")
				return
			}
		}
	}()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		cmd, arg, _ := strings.Cut(strings.TrimSpace(in.Text()), " ")
		switch cmd {
		case "go":
			f.mu.Lock()
			f.delays, f.errors = nil, 0
			f.mu.Unlock()
		case "want":
			want, _ := strconv.Atoi(arg)
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				f.mu.Lock()
				got := len(f.delays) + f.errors
				f.mu.Unlock()
				if got >= want {
					break
				}
			}
			report(f, want)
			return
		}
	}
	report(f, 0)
}

// read takes the messages of one websocket, which carries subs subscriptions, answering pings,
// until ctx ends or the node closes it (its subscriptions then count as ready: they will have no
// event).
func read(ctx context.Context, conn *websocket.Conn, socket string, subs int, f *figures) {
	for {
		var m message
		if err := wsjson.Read(ctx, conn, &m); err != nil {
			if ctx.Err() == nil {
				fmt.Fprintf(os.Stderr, "subscribers: websocket %s: %v\n", socket, err)
				f.socketClosed(socket, subs)
			}
			return
		}
		switch m.Type {
		case "ping":
			_ = wsjson.Write(ctx, conn, message{Type: "pong"})
		case "next":
			var n next
			if err := json.Unmarshal(m.Payload, &n); err != nil || n.Data.WorkflowEvents == nil || len(n.Errors) > 0 {
				f.add(socket+"/"+m.ID, 0, true)
				continue
			}
			f.add(socket+"/"+m.ID, time.Since(n.Data.WorkflowEvents.At), false)
		case "error", "complete":
			f.add(socket+"/"+m.ID, 0, true)
		}
	}
}

func report(f *figures, want int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	slices.Sort(f.delays)
	out := map[string]any{"events": len(f.delays), "errors": f.errors, "closed": f.closed, "want": want}
	if n := len(f.delays); n > 0 {
		out["p50_ms"] = float64(f.delays[n/2].Microseconds()) / 1000
		out["p99_ms"] = float64(f.delays[n*99/100].Microseconds()) / 1000
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "subscribers:", err)
	os.Exit(1)
}
