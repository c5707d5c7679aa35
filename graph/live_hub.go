package graph

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnflow/cairn/persistence"
)

// liveEvent is one change event as the hub read it, with the workflow as it was right after, and
// its cursor and workflow ID already encoded: the hub reads and encodes each event once, however
// many subscriptions it reaches.
type liveEvent struct {
	ev         *persistence.ChangeEvent
	workflow   *persistence.Workflow // nil when the workflow is gone
	cursor     persistence.EventCursor
	cursorText string
	workflowID string
}

// liveSub is one subscription's place in the hub: the hub sends it the events it matches without
// ever blocking, and closes ch when ch is full (the subscription then reads the database to catch
// up, or tells its client it fell behind).
type liveSub struct {
	filter persistence.WorkflowFilter
	ch     chan *liveEvent
	// dropped is set when the hub closed ch because it was full.
	dropped atomic.Bool
}

// matches applies the subscription's filter to an event: status and state are the event's (a
// subscriber to FINISHED sees the event that finished the workflow), the rest the workflow's.
func (s *liveSub) matches(e *liveEvent) bool {
	if e.workflow == nil {
		w := persistence.Workflow{ID: e.ev.WorkflowID, Status: e.ev.Status, State: e.ev.State}
		return s.filter.OnlyEventFields() && s.filter.Matches(&w)
	}
	return s.filter.MatchesChange(e.workflow, e.ev.Status, e.ev.State)
}

// liveHub is the node's one reader of the change events. After each commit hint (from this node,
// or from another through PostgreSQL NOTIFY) and at every poll interval it reads the new events
// once, with their workflows, and fans them out in memory to every subscription. It runs while
// any subscription is registered and stops with the last one.
type liveHub struct {
	store    Reads
	notifier *persistence.Notifier
	log      *slog.Logger
	poll     time.Duration
	buffer   int

	mu      sync.Mutex
	subs    map[*liveSub]struct{}
	pos     persistence.EventCursor // every event up to here was handed out
	running bool
	// idle wakes run when the last subscription leaves, so that it stops at once.
	idle chan struct{}
	// beforeFanOut, when set (by tests, before the hub starts), runs after the hub read a batch
	// and before it hands the batch out: a test holds the hub there to force an interleaving.
	beforeFanOut func()
}

func newLiveHub(store Reads, notifier *persistence.Notifier, log *slog.Logger, poll time.Duration, buffer int) *liveHub {
	return &liveHub{store: store, notifier: notifier, log: log, poll: poll, buffer: buffer, subs: map[*liveSub]struct{}{}, idle: make(chan struct{}, 1)}
}

// register adds a subscription and returns it with the hub's position: the subscription gets
// every matching event after that position, and none before it.
func (h *liveHub) register(ctx context.Context, f persistence.WorkflowFilter) (*liveSub, persistence.EventCursor, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.running {
		head, err := h.store.ChangeEventHead(ctx)
		if err != nil {
			return nil, persistence.EventCursor{}, err
		}
		h.pos, h.running = head, true
		hints, unsubscribe := h.notifier.Subscribe(persistence.TopicEvents)
		go h.run(hints, unsubscribe)
	}
	s := &liveSub{filter: f, ch: make(chan *liveEvent, h.buffer)}
	h.subs[s] = struct{}{}
	return s, h.pos, nil
}

// unregister removes a subscription (again is harmless).
func (h *liveHub) unregister(s *liveSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; ok {
		delete(h.subs, s)
		close(s.ch)
	}
	if len(h.subs) == 0 {
		select {
		case h.idle <- struct{}{}:
		default:
		}
	}
}

// run reads and fans out events until no subscription is left.
func (h *liveHub) run(hints <-chan string, unsubscribe func()) {
	defer unsubscribe()
	poll := time.NewTicker(h.poll)
	defer poll.Stop()
	for {
		h.readAll()
		select {
		case <-hints:
		case <-poll.C:
		case <-h.idle:
		}
		h.mu.Lock()
		if len(h.subs) == 0 {
			h.running = false
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
	}
}

// readAll reads every event after the hub's position and hands each to the subscriptions it
// matches. A read that fails is logged and tried again at the next hint or poll.
func (h *liveHub) readAll() {
	// The hub outlives any one request: its reads end with the process, and are bounded by the
	// statement's own timeout.
	ctx := context.Background()
	for {
		h.mu.Lock()
		pos := h.pos
		h.mu.Unlock()
		events, err := h.store.ChangeEventList(ctx, persistence.ChangeEventListParams{After: pos, Limit: eventBatch})
		if err != nil {
			h.log.Warn("error reading change events for subscriptions; retrying", "error", err)
			return
		}
		if len(events) == 0 {
			return
		}
		byID, err := workflowsOf(ctx, h.store, events)
		if err != nil {
			h.log.Warn("error loading workflows for subscriptions; retrying", "error", err)
			return
		}
		batch := make([]*liveEvent, len(events))
		for i, ev := range events {
			batch[i] = newLiveEvent(ev, byID[ev.WorkflowID])
		}
		if h.beforeFanOut != nil {
			h.beforeFanOut()
		}
		// Attribute filters read the workflows' search attributes: loaded only while some
		// subscription has one (checked again under the lock, for one that just registered).
		withAttributes := false
		h.mu.Lock()
		for h.needsAttributes() && !withAttributes {
			h.mu.Unlock()
			if err := loadAttributes(ctx, h.store, byID); err != nil {
				h.log.Warn("error loading attributes for subscriptions; retrying", "error", err)
				return
			}
			withAttributes = true
			h.mu.Lock()
		}
		for _, e := range batch {
			for s := range h.subs {
				if !s.matches(e) {
					continue
				}
				select {
				case s.ch <- e:
				default:
					// Never wait for a subscription: it catches up from the database.
					s.dropped.Store(true)
					delete(h.subs, s)
					close(s.ch)
				}
			}
		}
		h.pos = batch[len(batch)-1].cursor
		h.mu.Unlock()
		if len(events) < eventBatch {
			return
		}
	}
}

func newLiveEvent(ev *persistence.ChangeEvent, w *persistence.Workflow) *liveEvent {
	c := ev.CursorOf()
	return &liveEvent{ev: ev, workflow: w, cursor: c, cursorText: eventCursorOf(c), workflowID: encodeID(kindWorkflow, ev.WorkflowID)}
}

// needsAttributes reports whether a subscription filters by search attributes (h.mu held).
func (h *liveHub) needsAttributes() bool {
	for s := range h.subs {
		if len(s.filter.Attributes) > 0 {
			return true
		}
	}
	return false
}

// loadAttributes sets the search attributes of workflows (an empty map for one with none).
func loadAttributes(ctx context.Context, store Reads, byID map[int64]*persistence.Workflow) error {
	ids := make([]int64, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	attrs, err := store.WorkflowAttributeMaps(ctx, ids)
	if err != nil {
		return err
	}
	for id, w := range byID {
		if m := attrs[id]; m != nil {
			w.Attributes = m
		} else {
			w.Attributes = map[string]persistence.AttributeValue{}
		}
	}
	return nil
}

// workflowsOf loads the workflows that events name, by ID.
func workflowsOf(ctx context.Context, store Reads, events []*persistence.ChangeEvent) (map[int64]*persistence.Workflow, error) {
	ids := make([]int64, 0, len(events))
	for _, ev := range events {
		ids = append(ids, ev.WorkflowID)
	}
	slices.Sort(ids)
	// Without their data: a subscriber that asks for variables reads them when its event is sent.
	wfs, err := store.WorkflowGetManyWithoutData(ctx, slices.Compact(ids))
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]*persistence.Workflow, len(wfs))
	for _, w := range wfs {
		byID[w.ID] = w
	}
	return byID, nil
}
