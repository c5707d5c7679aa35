// Package engine is cairn's workflow engine: the operations on workflows and their rules (start,
// retry, pause, resume, cancel, signal, update, deploy, schedules, remote tasks), and the machinery
// the node drives: Execute runs a claimed workflow's step (execute.go) into an Outcome, whose next
// state is decided in next.go; Complete writes a batch of outcomes in one transaction
// (complete.go); Recover takes over dead executors' work (recover.go). The worker pool
// (internal/pool) claims and calls Execute and Complete; the node (package cairn) offers the
// operations to programs and the GraphQL API (package graph) to clients. Its types for callers
// are package workflow's.
package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairnflow/cairn/internal/batch"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// Options configures an Engine.
type Options struct {
	// Logger receives the engine's structured logs (slog.Default when nil).
	Logger *slog.Logger
	// Notifier carries wake-ups, change-event and cancel hints, and wakes Wait and Follow; one is
	// made when nil. Nodes sharing a PostgreSQL hear each other's hints when each passes its own
	// (persistence.NewNotifier) and runs its Run; without, they rely on polling.
	Notifier *persistence.Notifier
	// Limits bound what one workflow may store and do (DefaultLimits for zero fields).
	Limits workflow.Limits
}

// Engine holds the registered definitions and runs the operations and steps on a Store.
type Engine struct {
	store    *persistence.Store
	notifier *persistence.Notifier
	log      *slog.Logger
	limits   workflow.Limits

	mu   sync.RWMutex
	defs map[string]*registered
	// specs caches stored definition versions by persistence.DefinitionKey: a version never changes.
	specs sync.Map
	forms formSchemas
	// deploy holds the compiler of deployed documents and the deployed types this node runs.
	deploy deployState
	// alerts holds the webhook URL check of alert rules.
	alerts alertState

	runMu sync.Mutex
	// running cancels the attempts running on this node, by workflow and claimed version: an
	// attempt, not a workflow, is what runs (a late one of a node declared dead may overlap).
	running map[int64]map[int]runningStep
	// cancelled holds, for a while, the newest version of each workflow a cancel hint named: an
	// attempt claimed at an older version is stale, also one that starts only after the hint came.
	cancelled   map[int64]cancelHint
	cancelPrune time.Time

	// remote is this node's part of the remote task protocol (remote_ops.go).
	remote remoteState
	// starts is the group commit of Start.
	starts *batch.Group[startItem, workflow.StartResult]
	// bulkWake hints this node's bulk runner that an operation was started (bulk.go).
	bulkWake chan struct{}
	// attrKinds caches the kinds of search attribute names (a name's kind never changes).
	attrKinds sync.Map
	// traces caches the traceparents of traced workflows (tracing.go).
	traces traceCache
	// flow holds the flow controls in force (flow.go).
	flow flowState
	// newest holds the newest version of each type for starts (newest.go).
	newest newestState
	// wakes are the pools that take the workflows remote results wake (wake_claim.go).
	wakes wakeClaimers
}

// cancelHint is the newest cancel hint received for a workflow: the version the workflow had after
// it was paused or cancelled, and when the hint came.
type cancelHint struct {
	version int
	at      time.Time
}

// cancelHintKept is how long a cancel hint is remembered for attempts that have not started yet:
// far longer than a claimed attempt takes to start.
const cancelHintKept = time.Minute

type registered struct {
	def workflow.Definition
	row *persistence.Definition
}

// New returns an Engine over a Store.
func New(store *persistence.Store, opts Options) *Engine {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	n := opts.Notifier
	if n == nil {
		n = persistence.NewNotifier(store, log)
	}
	e := &Engine{store: store, notifier: n, log: log, limits: opts.Limits.WithDefaults(), defs: map[string]*registered{}, running: map[int64]map[int]runningStep{},
		cancelled: map[int64]cancelHint{}, bulkWake: make(chan struct{}, 1)}
	e.starts = e.newStartGroup()
	return e
}

// Store returns the Store the engine works on.
func (e *Engine) Store() *persistence.Store { return e.store }

// Notifier is the engine's notifier: wake-up, change-event and cancel hints.
func (e *Engine) Notifier() *persistence.Notifier { return e.notifier }

// Logger returns the engine's logger.
func (e *Engine) Logger() *slog.Logger { return e.log }

// Register validates a definition, stores it (a new version when its content changed since the last
// one; workflows already running keep the version they started with) and makes its handlers
// available to this node's workers. It returns the stored version.
func (e *Engine) Register(ctx context.Context, def workflow.Definition) (*persistence.Definition, error) {
	def = def.WithDefaults()
	if err := def.Validate(); err != nil {
		return nil, err
	}
	spec, sum, err := def.Spec()
	if err != nil {
		return nil, err
	}
	row, created, err := e.store.DefinitionSave(ctx, persistence.DefinitionSaveParams{
		Type: def.Type, Checksum: sum, Description: def.Description, Spec: spec, ExecutorGroup: def.ExecutorGroup})
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.defs[def.Type] = &registered{def: def, row: row}
	e.mu.Unlock()
	if created {
		e.definitionChanged(def.Type)
	}
	return row, nil
}

// Definition returns the definition registered for a type on this node.
func (e *Engine) Definition(typ string) (*workflow.Definition, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	r, ok := e.defs[typ]
	if !ok {
		return nil, false
	}
	return &r.def, true
}

// groups returns the executor groups of the registered definitions, sorted.
func (e *Engine) groups() []string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	set := map[string]bool{}
	for _, r := range e.defs {
		set[r.def.ExecutorGroup] = true
	}
	out := make([]string, 0, len(set))
	for g := range set {
		out = append(out, g)
	}
	sort.Strings(out)
	return out
}

// Types returns the types registered on this node in an executor group, sorted: what its worker
// pool for that group may claim.
func (e *Engine) Types(group string) []string {
	e.mu.RLock()
	var out []string
	for typ, r := range e.defs {
		if r.def.ExecutorGroup == group {
			out = append(out, typ)
		}
	}
	e.mu.RUnlock()
	out = append(out, e.deployedTypes(group)...)
	sort.Strings(out)
	return out
}

// StepTimeouts lists the states of an executor group's definitions (those registered on this node
// and every stored version it has read) whose steps may run for another time than
// DefaultStepTimeout: a claim gives their workflows the attempt's real deadline.
func (e *Engine) StepTimeouts(group string) []persistence.StepTimeout {
	var out []persistence.StepTimeout
	add := func(d *workflow.Definition, version int) {
		if d.ExecutorGroup != group {
			return
		}
		for i := range d.States {
			if t := d.TimeoutOf(&d.States[i]); t != workflow.DefaultStepTimeout {
				out = append(out, persistence.StepTimeout{Type: d.Type, Version: version, State: d.States[i].Name, Timeout: t})
			}
		}
	}
	seen := map[persistence.DefinitionKey]bool{}
	e.mu.RLock()
	for _, r := range e.defs {
		key := persistence.DefinitionKey{Type: r.def.Type, Version: r.row.Version}
		seen[key] = true
		add(&r.def, r.row.Version)
	}
	e.mu.RUnlock()
	e.specs.Range(func(k, v any) bool {
		if key := k.(persistence.DefinitionKey); !seen[key] {
			add(v.(*workflow.Definition), key.Version)
		}
		return true
	})
	return out
}

// SetReleaseState puts a definition ONLINE or OFFLINE (an OFFLINE type starts no new workflow;
// those running go on), and records it in the audit log, as actor's act, in the same transaction.
func (e *Engine) SetReleaseState(ctx context.Context, typ string, state persistence.ReleaseState, actor string) (*persistence.Definition, error) {
	if state != persistence.ReleaseOnline && state != persistence.ReleaseOffline {
		return nil, invalid("releaseState", "release state must be ONLINE or OFFLINE, not %q", state)
	}
	var def *persistence.Definition
	err := e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		if err := tx.DefinitionSetReleaseState(ctx, persistence.DefinitionSetReleaseStateParams{Type: typ, State: state}); err != nil {
			if workflow.CodeOf(err) == workflow.CodeNotFound {
				return notFound("type", "no workflow definition of type %q", typ)
			}
			return err
		}
		var err error
		if def, err = tx.DefinitionGet(ctx, persistence.DefinitionGetParams{Type: typ}); err != nil {
			return err
		}
		return audit(ctx, tx, actor, "setDefinitionReleaseState", typ, "", map[string]any{"releaseState": state, "version": def.Version})
	})
	if err != nil {
		return nil, err
	}
	e.definitionChanged(typ)
	return def, nil
}

// runningStep is an attempt running on this node: who claimed it, and how to cancel it.
type runningStep struct {
	executorID int64
	cancel     context.CancelFunc
}

// trackRunning remembers how to cancel a running attempt (a workflow claimed at a version by an
// executor); the returned func forgets it. An attempt whose workflow was paused or cancelled after
// it was claimed, and the hint came before the attempt started, is cancelled at once.
func (e *Engine) trackRunning(id int64, version int, executorID int64, cancel context.CancelFunc) func() {
	e.runMu.Lock()
	if e.running[id] == nil {
		e.running[id] = map[int]runningStep{}
	}
	e.running[id][version] = runningStep{executorID: executorID, cancel: cancel}
	hint, hinted := e.cancelled[id]
	e.runMu.Unlock()
	if hinted && hint.version > version {
		cancel()
	}
	return func() {
		e.runMu.Lock()
		delete(e.running[id], version)
		if len(e.running[id]) == 0 {
			delete(e.running, id)
		}
		e.runMu.Unlock()
	}
}

// cancelRunning cancels the attempts of a workflow running on this node that were claimed before
// it reached version (0: every attempt), and remembers the version for attempts claimed before it
// that have not started yet. An attempt claimed after the pause or cancel (at a newer version,
// after a resume) goes on.
func (e *Engine) cancelRunning(id int64, version int) {
	now := time.Now()
	e.runMu.Lock()
	if version > 0 && version > e.cancelled[id].version {
		e.cancelled[id] = cancelHint{version: version, at: now}
	}
	if now.Sub(e.cancelPrune) > cancelHintKept {
		for k, h := range e.cancelled {
			if now.Sub(h.at) > cancelHintKept {
				delete(e.cancelled, k)
			}
		}
		e.cancelPrune = now
	}
	cancels := make([]context.CancelFunc, 0, len(e.running[id]))
	for v, r := range e.running[id] {
		if version == 0 || v < version {
			cancels = append(cancels, r.cancel)
		}
	}
	e.runMu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
}

// interrupt cancels the attempts of a workflow, paused or cancelled at version, claimed before
// that: on this node at once (before the operation returns), and on other nodes through the
// notifier.
func (e *Engine) interrupt(id int64, version int) {
	e.cancelRunning(id, version)
	e.notifier.Notify(persistence.TopicCancel, cancelHintPayload(id, version))
}

// cancelHintPayload is the payload of a TopicCancel hint: the workflow and the version it reached
// when it was paused or cancelled.
func cancelHintPayload(id int64, version int) string { return fmt.Sprintf("%d:%d", id, version) }

// parseCancelHint reads a TopicCancel payload: "id:version", or "id" alone (every attempt).
func parseCancelHint(payload string) (id int64, version int, ok bool) {
	idText, versionText, hasVersion := strings.Cut(payload, ":")
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	if hasVersion {
		if version, err = strconv.Atoi(versionText); err != nil || version < 0 {
			return 0, 0, false
		}
	}
	return id, version, true
}

// CancelExecutorSteps cancels the steps running on this node for an executor, and returns how
// many: when the executor was declared dead, its workflows went to other executors, and what its
// steps would write is fenced off anyway.
func (e *Engine) CancelExecutorSteps(executorID int64) int {
	e.runMu.Lock()
	var cancels []context.CancelFunc
	for _, byVersion := range e.running {
		for _, r := range byVersion {
			if r.executorID == executorID {
				cancels = append(cancels, r.cancel)
			}
		}
	}
	e.runMu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
	return len(cancels)
}

// RunCancelListener cancels running steps of workflows cancelled or paused anywhere, and forgets
// the newest versions cached for starts of types changed elsewhere, until ctx ends.
func (e *Engine) RunCancelListener(ctx context.Context) {
	ch, unsubscribe := e.notifier.Subscribe(persistence.TopicCancel)
	defer unsubscribe()
	defs, unsubscribeDefs := e.notifier.Subscribe(persistence.TopicDefinitions)
	defer unsubscribeDefs()
	for {
		select {
		case <-ctx.Done():
			return
		case typ := <-defs:
			e.forgetNewest(typ) // "" after a reconnect: every type
		case payload := <-ch:
			if id, version, ok := parseCancelHint(payload); ok {
				e.cancelRunning(id, version)
				continue
			}
			// An empty hint (after a reconnect): check every running step's workflow.
			e.cancelStale(ctx)
		}
	}
}

func (e *Engine) cancelStale(ctx context.Context) {
	e.runMu.Lock()
	ids := make([]int64, 0, len(e.running))
	for id := range e.running {
		ids = append(ids, id)
	}
	e.runMu.Unlock()
	wfs, err := e.store.WorkflowGetMany(ctx, ids)
	if err != nil {
		return
	}
	for _, w := range wfs {
		if w.Status != persistence.StatusExecuting {
			e.cancelRunning(w.ID, 0) // cancelled or paused while its step ran
		}
	}
}

// afterCommit sends the hints for what a transaction made due or changed.
func (e *Engine) afterCommit(wakeGroups map[string]bool, events bool) {
	for g := range wakeGroups {
		e.notifier.Notify(persistence.TopicWake, g)
	}
	if events {
		e.notifier.Notify(persistence.TopicEvents, "")
	}
}

// decodeObject checks that raw is a JSON object (empty means {}) and returns it compacted.
func decodeObject(field string, raw json.RawMessage) (map[string]json.RawMessage, json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]json.RawMessage{}, json.RawMessage(`{}`), nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, nil, invalid(field, "must be a JSON object")
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, nil, invalid(field, "must be a JSON object: %v", err)
	}
	return m, b, nil
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func timePtr(t time.Time) *time.Time { return &t }
