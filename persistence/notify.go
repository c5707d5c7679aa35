package persistence

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Notification topics. A notification is a hint ("look again"), never the data itself: whoever
// receives one reads the database, and polling covers any that are lost.
const (
	// TopicWake: due work was added for the executor group in the payload.
	TopicWake = "wake"
	// TopicEvents: change events were committed.
	TopicEvents = "events"
	// TopicCancel: the workflow in the payload ("id:version") was paused or cancelled at that
	// version; its attempts claimed before must stop.
	TopicCancel = "cancel"
	// TopicFlowKey: a workflow with a concurrency key became due (FlowKeyPayload): a pool may claim
	// for that key alone instead of looking at every key of the type.
	TopicFlowKey = "flowkey"
	// TopicDefinitions: a definition version was stored or its release state set (the payload is
	// its type): the newest version cached for starts must be read again.
	TopicDefinitions = "definitions"
)

// FlowKeyPayload is the payload of TopicFlowKey: the executor group, type and key.
func FlowKeyPayload(group, typ, key string) string { return group + "\x1f" + typ + "\x1f" + key }

// ParseFlowKeyPayload reads a TopicFlowKey payload.
func ParseFlowKeyPayload(payload string) (group, typ, key string, ok bool) {
	group, rest, ok1 := strings.Cut(payload, "\x1f")
	typ, key, ok2 := strings.Cut(rest, "\x1f")
	return group, typ, key, ok1 && ok2
}

// Notifier delivers hints between the parts of one node at once, and between nodes sharing a
// PostgreSQL through LISTEN/NOTIFY, coalescing identical hints sent within a few milliseconds.
type Notifier struct {
	store *Store
	nonce string
	log   *slog.Logger

	mu      sync.Mutex
	subs    map[string]map[chan string]struct{}
	pending map[string]struct{}
	kick    chan struct{}
}

// NewNotifier returns a Notifier for a Store. Call Run to connect it to other nodes (PostgreSQL).
func NewNotifier(store *Store, log *slog.Logger) *Notifier {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	if log == nil {
		log = slog.Default()
	}
	return &Notifier{store: store, nonce: hex.EncodeToString(b), log: log,
		subs: map[string]map[chan string]struct{}{}, pending: map[string]struct{}{}, kick: make(chan struct{}, 1)}
}

// Subscribe returns a channel of the payloads of a topic and a function that ends the
// subscription. Sends never block: a subscriber that falls behind misses hints, not data.
func (n *Notifier) Subscribe(topic string) (<-chan string, func()) {
	ch := make(chan string, 64)
	n.mu.Lock()
	if n.subs[topic] == nil {
		n.subs[topic] = map[chan string]struct{}{}
	}
	n.subs[topic][ch] = struct{}{}
	n.mu.Unlock()
	return ch, func() {
		n.mu.Lock()
		delete(n.subs[topic], ch)
		n.mu.Unlock()
	}
}

// Notify delivers a hint to this node's subscribers now and, on PostgreSQL, to other nodes soon.
func (n *Notifier) Notify(topic, payload string) {
	n.deliver(topic, payload)
	if n.store == nil || !n.store.Capabilities().Listen {
		return
	}
	n.mu.Lock()
	n.pending[topic+"|"+payload] = struct{}{}
	n.mu.Unlock()
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

func (n *Notifier) deliver(topic, payload string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for ch := range n.subs[topic] {
		select {
		case ch <- payload:
		default:
		}
	}
}

// Run connects the Notifier to other nodes until ctx ends: it LISTENs on PostgreSQL and sends the
// pending hints (coalesced every 2ms). On SQLite there are no other nodes and it just waits.
func (n *Notifier) Run(ctx context.Context) {
	if n.store == nil || !n.store.Capabilities().Listen {
		<-ctx.Done()
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); n.sendLoop(ctx) }()
	go func() { defer wg.Done(); n.listenLoop(ctx) }()
	wg.Wait()
}

func (n *Notifier) sendLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.kick:
		}
		n.mu.Lock()
		batch := make([]string, 0, len(n.pending))
		for k := range n.pending {
			batch = append(batch, n.nonce+"|"+k)
		}
		n.pending = map[string]struct{}{}
		n.mu.Unlock()
		if len(batch) > 0 {
			if err := n.store.dialect.sendHints(ctx, n.store, batch); err != nil && ctx.Err() == nil {
				n.log.Warn("error sending notifications", "error", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func (n *Notifier) listenLoop(ctx context.Context) {
	for ctx.Err() == nil {
		if err := n.listen(ctx); err != nil && ctx.Err() == nil {
			n.log.Warn("lost the notification connection; reconnecting", "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

func (n *Notifier) listen(ctx context.Context) error {
	// Anything sent while we were not listening is covered by waking every subscriber once.
	return n.store.dialect.listenHints(ctx, n.store, n.deliverAll, func(hint string) {
		nonce, rest, ok := strings.Cut(hint, "|")
		if !ok || nonce == n.nonce {
			return
		}
		topic, payload, _ := strings.Cut(rest, "|")
		n.deliver(topic, payload)
	})
}

// deliverAll sends an empty hint to every subscriber of every topic.
func (n *Notifier) deliverAll() {
	n.mu.Lock()
	topics := make([]string, 0, len(n.subs))
	for t := range n.subs {
		topics = append(topics, t)
	}
	n.mu.Unlock()
	for _, t := range topics {
		n.deliver(t, "")
	}
}
