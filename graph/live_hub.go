package graph

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cairnflow/cairn/graph/internal/request"
	"github.com/cairnflow/cairn/graph/model"
	"github.com/cairnflow/cairn/persistence"
)

// liveEvent is one change event as the hub read it, with the workflow as it was right after, and
// its cursor, workflow ID and GraphQL object already made: the hub reads and encodes each event
// once, however many subscriptions it reaches.
type liveEvent struct {
	model      *model.WorkflowEvent
	ev         *persistence.ChangeEvent
	workflow   *persistence.Workflow // nil when the workflow is gone
	cursor     persistence.EventCursor
	cursorText string
	workflowID string
}

// liveSub is one subscription's place in the hub: the hub sends it the events it matches without
// ever blocking, those of one read of the database as one batch, and closes ch when the
// subscription would hold more than the hub's buffer of events it has not taken, or ch is full
// (the subscription then reads the database to catch up, or tells its client it fell behind).
type liveSub struct {
	filter persistence.WorkflowFilter
	ch     chan []*liveEvent
	// pending counts the events sent on ch that the subscription has not taken yet: the hub adds
	// a batch's length when it sends one, the subscription takes it off when it receives it.
	pending atomic.Int64
	// next gathers the events of the batch the hub is handing out (the hub's goroutine only).
	next []*liveEvent
	// live, once set (h.mu held), is where the hub sends the subscription's events itself, and
	// ch only closes when the subscription ends.
	live *liveSink
}

// liveSink is a workflowEvents subscription's stream once its backlog is sent: the hub writes
// the events after sent to out, up to size of them waiting; out has one slot more, for the
// error that tells a subscriber it fell behind.
type liveSink struct {
	out  chan *model.WorkflowEvent
	size int
	sent persistence.EventCursor
	// ids are the event ids of the subscription's SSE stream (nil on other transports), looked
	// up once: the hub sends every subscription's events itself.
	ids *request.EventIDs
}

// put sends the events of batch after sent; false when the subscriber fell behind (it then got
// the error, and nothing more may be sent).
func (k *liveSink) put(batch []*liveEvent) bool {
	for _, e := range batch {
		if !e.cursor.After(k.sent) {
			continue // also in the backlog
		}
		if len(k.out) >= k.size {
			// Its id is the resume cursor: an EventSource reconnects from there by itself.
			k.ids.Note(eventCursorOf(k.sent))
			k.out <- model.NewFailedEvent(&gqlerror.Error{
				Message:    "the subscriber fell behind; subscribe again with after set to extensions.cursor",
				Extensions: map[string]any{"code": codeSlowSubscriber, "cursor": eventCursorOf(k.sent)},
			})
			return false
		}
		k.ids.Note(e.cursorText)
		k.out <- e.model
		k.sent = e.cursor
	}
	return true
}

// take notes that the subscription received batch from ch.
func (s *liveSub) take(batch []*liveEvent) { s.pending.Add(-int64(len(batch))) }

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

	mu   sync.Mutex
	subs map[*liveSub]struct{}
	// byID, byType and anyWorkflow hold the subscriptions again, each in the place its filter
	// points to: by the workflow IDs it names, else by the types it names, else among those that
	// judge every event. An event is matched only against the subscriptions of its workflow, of
	// its type and of anyWorkflow, so a node with many subscriptions for other workflows or types
	// spends nothing on them.
	byID        map[int64]map[*liveSub]struct{}
	byType      map[string]map[*liveSub]struct{}
	anyWorkflow map[*liveSub]struct{}
	// withAttributes counts the subscriptions that filter by search attributes.
	withAttributes int
	pos            persistence.EventCursor // every event up to here was handed out
	running        bool
	// idle wakes run when the last subscription leaves, so that it stops at once.
	idle chan struct{}
	// rounds counts the hub's reads (each of one or more batches) and judged the filters it
	// applied to events: what a node's subscriptions cost it.
	rounds, judged atomic.Int64
	// beforeFanOut, when set (by tests, before the hub starts), runs after the hub read a batch
	// and before it hands the batch out: a test holds the hub there to force an interleaving.
	beforeFanOut func()
	// readGap is hubReadGap (a test lengthens it); restWoken, when set (by tests), runs when the
	// last subscription's leaving wakes the hub from its rest after a read.
	readGap   time.Duration
	restWoken func()
}

func newLiveHub(store Reads, notifier *persistence.Notifier, log *slog.Logger, poll time.Duration, buffer int) *liveHub {
	return &liveHub{
		store: store, notifier: notifier, log: log, poll: poll, buffer: buffer,
		subs: map[*liveSub]struct{}{}, byID: map[int64]map[*liveSub]struct{}{},
		byType: map[string]map[*liveSub]struct{}{}, anyWorkflow: map[*liveSub]struct{}{},
		idle: make(chan struct{}, 1), readGap: hubReadGap,
	}
}

// add places s in the hub's sets (h.mu held).
func (h *liveHub) add(s *liveSub) {
	h.subs[s] = struct{}{}
	h.place(s, true)
}

// remove takes s out of the hub's sets and closes its channel (h.mu held; again is harmless).
func (h *liveHub) remove(s *liveSub) {
	if _, ok := h.subs[s]; !ok {
		return
	}
	delete(h.subs, s)
	h.place(s, false)
	close(s.ch)
}

// place puts s in (in) or takes it out of the sets its filter points to: by the workflow IDs it
// names, else by its types, else among those that judge every event.
func (h *liveHub) place(s *liveSub, in bool) {
	switch {
	case len(s.filter.IDs) > 0:
		for _, id := range s.filter.IDs {
			placeIn(h.byID, id, s, in)
		}
	case len(s.filter.Types) > 0:
		for _, t := range s.filter.Types {
			placeIn(h.byType, t, s, in)
		}
	case in:
		h.anyWorkflow[s] = struct{}{}
	default:
		delete(h.anyWorkflow, s)
	}
	if len(s.filter.Attributes) > 0 {
		if in {
			h.withAttributes++
		} else {
			h.withAttributes--
		}
	}
}

// placeIn adds s to (in) or removes it from the set of key k, dropping a set left empty.
func placeIn[K comparable](m map[K]map[*liveSub]struct{}, k K, s *liveSub, in bool) {
	set := m[k]
	switch {
	case in && set == nil:
		m[k] = map[*liveSub]struct{}{s: {}}
	case in:
		set[s] = struct{}{}
	case set != nil:
		delete(set, s)
		if len(set) == 0 {
			delete(m, k)
		}
	}
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
	s := &liveSub{filter: f, ch: make(chan []*liveEvent, min(h.buffer, subBatches))}
	h.add(s)
	return s, h.pos, nil
}

// goLive hands the hub the sending of s's events to k.out, after those s was sent and has not
// taken. It reports false when the hub dropped s (the subscription catches up from the database
// and registers again), and ended when the subscriber fell behind (it got the error and the
// stream is over).
func (h *liveHub) goLive(s *liveSub, k *liveSink) (live, ended bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; !ok {
		return false, false
	}
	for {
		select {
		case batch := <-s.ch:
			s.take(batch)
			if !k.put(batch) {
				h.remove(s)
				return false, true
			}
			continue
		default:
		}
		break
	}
	s.live = k
	return true, false
}

// subBatches is how many batches a subscription's channel holds: each is a read of the hub's (at
// least hubReadGap apart), so a subscription still sending its backlog lets 32 reads pass before
// the hub drops it (it then catches up from the database). A subscription past its backlog gets
// its events from the hub directly, and ch only closes.
const subBatches = 32

// unregister removes a subscription (again is harmless).
func (h *liveHub) unregister(s *liveSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.remove(s)
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
		began := time.Now()
		h.rounds.Add(1)
		h.readAll()
		// The last subscription's leaving ends the rest and the wait at once. (Passing it on to
		// the wait with a send into idle blocked the hub for good when another subscription had
		// come and gone in between: idle holds one wake-up.)
		woken := false
		if rest := h.readGap - time.Since(began); rest > 0 {
			select {
			case <-time.After(rest):
			case <-h.idle:
				if h.restWoken != nil {
					h.restWoken()
				}
				woken = true
			}
		}
		if !woken {
			select {
			case <-hints:
			case <-poll.C:
			case <-h.idle:
			}
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

// Each subscription the hub hands events to has a goroutine that then runs (the transport's,
// which encodes and writes them). Woken all at once, thousands of them would queue ahead of the
// engine's own goroutines. So the hub hands events out fanOutChunk subscriptions at a time, and
// after each chunk rests fanOutGap for each subscription it woke (10,000 subscriptions: 80 ms in
// all), which also bounds how often it wakes them: the more subscriptions, the more events each
// wake carries.
const (
	fanOutChunk = 500
	fanOutGap   = 8 * time.Microsecond
)

// hubReadGap is the least time between the starts of two reads of the hub: commits come many
// times a millisecond on a busy node, and a read after each would cost the database more than the
// engine's own work (a single subscription cut the start rate by a fifth). Events wait at most
// this long for the read that hands them out.
const hubReadGap = 5 * time.Millisecond

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
		for h.withAttributes > 0 && !withAttributes {
			h.mu.Unlock()
			if err := loadAttributes(ctx, h.store, byID); err != nil {
				h.log.Warn("error loading attributes for subscriptions; retrying", "error", err)
				return
			}
			withAttributes = true
			h.mu.Lock()
		}
		var reached []*liveSub
		for _, e := range batch {
			reached = h.gather(e, h.byID[e.ev.WorkflowID], reached)
			if e.workflow != nil {
				reached = h.gather(e, h.byType[e.workflow.Type], reached)
			}
			reached = h.gather(e, h.anyWorkflow, reached)
		}
		// A subscription that registers from here on starts after this batch.
		h.pos = batch[len(batch)-1].cursor
		h.mu.Unlock()
		h.deliver(reached)
		if len(events) < eventBatch {
			return
		}
	}
}

func newLiveEvent(ev *persistence.ChangeEvent, w *persistence.Workflow) *liveEvent {
	c := ev.CursorOf()
	e := &liveEvent{ev: ev, workflow: w, cursor: c, cursorText: eventCursorOf(c), workflowID: encodeID(kindWorkflow, ev.WorkflowID)}
	e.model = model.NewWorkflowEvent(ev, e.cursorText, e.workflowID, w)
	return e
}

// gather adds e to the next batch of each subscription of set that matches it, and returns
// reached with the subscriptions whose batch it started (h.mu held; only the hub's goroutine
// touches a subscription's next batch). Each subscription is in one
// set for a given event: an event has one workflow and one type.
func (h *liveHub) gather(e *liveEvent, set map[*liveSub]struct{}, reached []*liveSub) []*liveSub {
	h.judged.Add(int64(len(set)))
	for s := range set {
		if !s.matches(e) {
			continue
		}
		if len(s.next) == 0 {
			reached = append(reached, s)
		}
		s.next = append(s.next, e)
	}
	return reached
}

// deliver sends the subscriptions reached their batches, a chunk at a time.
func (h *liveHub) deliver(reached []*liveSub) {
	for len(reached) > 0 {
		n := min(len(reached), fanOutChunk)
		h.mu.Lock()
		for _, s := range reached[:n] {
			h.send(s)
		}
		h.mu.Unlock()
		reached = reached[n:]
		if rest := time.Duration(n) * fanOutGap; rest >= time.Millisecond {
			time.Sleep(rest)
		}
	}
}

// send hands s its batch, or drops s when that would leave it more than the buffer's events to
// take; a subscription that left since its batch was gathered gets nothing (h.mu held). It never
// waits for a subscription: a dropped one catches up from the database.
func (h *liveHub) send(s *liveSub) {
	batch := s.next
	s.next = nil
	if _, ok := h.subs[s]; !ok {
		return
	}
	if s.live != nil {
		if !s.live.put(batch) {
			h.remove(s)
		}
		return
	}
	if s.pending.Add(int64(len(batch))) <= int64(h.buffer) {
		select {
		case s.ch <- batch:
			return
		default:
		}
	}
	h.remove(s)
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
