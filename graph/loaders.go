package graph

import (
	"context"
	"sync"
	"time"

	"github.com/graph-gophers/dataloader/v7"

	"github.com/cairnflow/cairn/persistence"
)

// dataloaderWait is how long a dataloader gathers keys before it runs a batch. Prefetching of
// siblings makes the statement count independent of it; it only trades latency for fewer batches.
const dataloaderWait = 2 * time.Millisecond

// maxSiblings bounds how many listed workflows a batch prefetches for.
const maxSiblings = 1000

// pageKey asks for one page of a workflow's actions or task instances.
type pageKey struct {
	WorkflowID int64
	Page       persistence.PageParams
}

// loaders are the dataloaders of one response (one query, one mutation, or one subscription
// event): each caches what it loaded for that response only.
type loaders struct {
	store Reads

	mu       sync.Mutex
	siblings []*persistence.Workflow
	seen     map[int64]bool

	workflows       *dataloader.Loader[int64, *persistence.Workflow]
	data            *dataloader.Loader[int64, *persistence.WorkflowData]
	executors       *dataloader.Loader[int64, *persistence.Executor]
	definitions     *dataloader.Loader[persistence.DefinitionKey, *persistence.Definition]
	actions         *dataloader.Loader[pageKey, []*persistence.Action]
	actionByID      *dataloader.Loader[int64, *persistence.Action]
	taskInstances   *dataloader.Loader[pageKey, []*persistence.TaskInstance]
	taskByID        *dataloader.Loader[int64, *persistence.TaskInstance]
	actionCounts    *dataloader.Loader[int64, int]
	taskCounts      *dataloader.Loader[int64, int]
	sideEffects     *dataloader.Loader[int64, []*persistence.SideEffect]
	signals         *dataloader.Loader[int64, []*persistence.Signal]
	forms           *dataloader.Loader[int64, []*persistence.FormSubmission]
	workflowLogs    *dataloader.Loader[int64, []*persistence.ActivityLog]
	taskLogs        *dataloader.Loader[int64, []*persistence.ActivityLog]
	variableChanges *dataloader.Loader[int64, []*persistence.ActionVariable]
	held            *dataloader.Loader[int64, []*persistence.Workflow]
	attributes      *dataloader.Loader[int64, map[string]persistence.AttributeValue]
	pendingRemote   *dataloader.Loader[int64, []string]
	// stuck are the stuck rules of the response, read once (stuck.go).
	stuckMu sync.Mutex
	stuck   *persistence.StuckRules
	// flow is what holds flow-controlled types back (flowcontrol.go).
	flow flowBlocks
}

type loadersKey struct{}

// responseLoaders are the loaders of one response, made when a resolver first asks for them: a
// mutation such as startWorkflow, which reads nothing through them, does not pay for them.
type responseLoaders struct {
	store Reads
	once  sync.Once
	l     *loaders
}

// withLoaders returns ctx with fresh loaders.
func withLoaders(ctx context.Context, store Reads) context.Context {
	return context.WithValue(ctx, loadersKey{}, &responseLoaders{store: store})
}

// loadersFor returns the loaders of the current response, or fresh ones when there are none
// (a resolver called outside a response: never cached across responses).
func loadersFor(ctx context.Context, store Reads) *loaders {
	if r, ok := ctx.Value(loadersKey{}).(*responseLoaders); ok {
		r.once.Do(func() { r.l = newLoaders(r.store) })
		return r.l
	}
	return newLoaders(store)
}

// listed records workflows a resolver returned in a list: the loaders fetch what their siblings need
// along with what the first of them asks for.
func (l *loaders) listed(wfs ...*persistence.Workflow) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range wfs {
		if w != nil && !l.seen[w.ID] && len(l.siblings) < maxSiblings {
			l.seen[w.ID] = true
			l.siblings = append(l.siblings, w)
		}
	}
}

func (l *loaders) siblingList() []*persistence.Workflow {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*persistence.Workflow(nil), l.siblings...)
}

// siblingIDs returns the IDs of the listed workflows.
func (l *loaders) siblingIDs([]int64) []int64 {
	sib := l.siblingList()
	out := make([]int64, len(sib))
	for i, w := range sib {
		out[i] = w.ID
	}
	return out
}

// siblingPages extends page keys with the same page of every listed workflow; pages after or before
// a cursor belong to one workflow and are not extended.
func (l *loaders) siblingPages(keys []pageKey) []pageKey {
	pages := map[persistence.PageParams]bool{}
	for _, k := range keys {
		if k.Page.After == 0 && k.Page.Before == 0 {
			pages[k.Page] = true
		}
	}
	var out []pageKey
	for page := range pages {
		for _, w := range l.siblingList() {
			out = append(out, pageKey{WorkflowID: w.ID, Page: page})
		}
	}
	return out
}

func newLoaders(store Reads) *loaders {
	l := &loaders{store: store, seen: map[int64]bool{}}
	l.workflows = newPrefetch(nil, func(ctx context.Context, ids []int64) (map[int64]*persistence.Workflow, error) {
		rows, err := store.WorkflowGetMany(ctx, ids)
		return byKey(rows, err, func(w *persistence.Workflow) int64 { return w.ID })
	}).loader()
	l.data = newPrefetch(l.siblingIDs, func(ctx context.Context, ids []int64) (map[int64]*persistence.WorkflowData, error) {
		return fetchData(ctx, store, ids)
	}).loader()
	l.executors = newPrefetch(func([]int64) []int64 {
		var out []int64
		for _, w := range l.siblingList() {
			if w.ExecutorID != nil {
				out = append(out, *w.ExecutorID)
			}
		}
		return out
	}, func(ctx context.Context, ids []int64) (map[int64]*persistence.Executor, error) {
		rows, err := store.ExecutorGetMany(ctx, ids)
		return byKey(rows, err, func(e *persistence.Executor) int64 { return e.ID })
	}).loader()
	l.definitions = newPrefetch(func([]persistence.DefinitionKey) []persistence.DefinitionKey {
		var out []persistence.DefinitionKey
		for _, w := range l.siblingList() {
			out = append(out, persistence.DefinitionKey{Type: w.Type, Version: w.DefinitionVersion})
		}
		return out
	}, func(ctx context.Context, keys []persistence.DefinitionKey) (map[persistence.DefinitionKey]*persistence.Definition, error) {
		rows, err := store.DefinitionGetMany(ctx, keys)
		return byKey(rows, err, func(d *persistence.Definition) persistence.DefinitionKey {
			return persistence.DefinitionKey{Type: d.Type, Version: d.Version}
		})
	}).loader()
	l.actions = newPrefetch(l.siblingPages, func(ctx context.Context, keys []pageKey) (map[pageKey][]*persistence.Action, error) {
		return perPage(ctx, keys, func(ctx context.Context, ids []int64, page persistence.PageParams) ([]*persistence.Action, error) {
			return store.ActionList(ctx, persistence.ActionListParams{WorkflowIDs: ids, Page: page})
		}, func(a *persistence.Action) int64 { return a.WorkflowID })
	}).loader()
	l.taskInstances = newPrefetch(l.siblingPages, func(ctx context.Context, keys []pageKey) (map[pageKey][]*persistence.TaskInstance, error) {
		return perPage(ctx, keys, func(ctx context.Context, ids []int64, page persistence.PageParams) ([]*persistence.TaskInstance, error) {
			return store.TaskInstanceList(ctx, persistence.TaskInstanceListParams{WorkflowIDs: ids, Page: page})
		}, func(t *persistence.TaskInstance) int64 { return t.WorkflowID })
	}).loader()
	l.actionByID = newPrefetch(nil, func(ctx context.Context, ids []int64) (map[int64]*persistence.Action, error) {
		rows, err := store.ActionGetMany(ctx, ids)
		return byKey(rows, err, func(a *persistence.Action) int64 { return a.ID })
	}).loader()
	l.taskByID = newPrefetch(nil, func(ctx context.Context, ids []int64) (map[int64]*persistence.TaskInstance, error) {
		rows, err := store.TaskInstanceGetMany(ctx, ids)
		return byKey(rows, err, func(t *persistence.TaskInstance) int64 { return t.ID })
	}).loader()
	counter := func(table string) *dataloader.Loader[int64, int] {
		return newPrefetch(l.siblingIDs, func(ctx context.Context, ids []int64) (map[int64]int, error) {
			return store.CountByWorkflow(ctx, table, ids)
		}).loader()
	}
	l.actionCounts = counter("actions")
	l.taskCounts = counter("task_instances")
	l.sideEffects = newPrefetch(l.siblingIDs, func(ctx context.Context, ids []int64) (map[int64][]*persistence.SideEffect, error) {
		rows, err := store.SideEffectList(ctx, ids)
		return groupBy(rows, err, func(s *persistence.SideEffect) int64 { return s.WorkflowID })
	}).loader()
	l.signals = newPrefetch(l.siblingIDs, func(ctx context.Context, ids []int64) (map[int64][]*persistence.Signal, error) {
		rows, err := store.SignalList(ctx, ids)
		return groupBy(rows, err, func(s *persistence.Signal) int64 { return s.WorkflowID })
	}).loader()
	l.forms = newPrefetch(l.siblingIDs, func(ctx context.Context, ids []int64) (map[int64][]*persistence.FormSubmission, error) {
		rows, err := store.FormSubmissionList(ctx, ids...)
		return groupBy(rows, err, func(f *persistence.FormSubmission) int64 { return f.WorkflowID })
	}).loader()
	l.workflowLogs = newPrefetch(l.siblingIDs, func(ctx context.Context, ids []int64) (map[int64][]*persistence.ActivityLog, error) {
		rows, err := store.ActivityLogList(ctx, persistence.ActivityLogListParams{WorkflowIDs: ids})
		return groupBy(rows, err, func(a *persistence.ActivityLog) int64 { return a.WorkflowID })
	}).loader()
	l.taskLogs = newPrefetch(nil, func(ctx context.Context, ids []int64) (map[int64][]*persistence.ActivityLog, error) {
		rows, err := store.ActivityLogList(ctx, persistence.ActivityLogListParams{TaskInstanceIDs: ids})
		return groupBy(rows, err, func(a *persistence.ActivityLog) int64 {
			if a.TaskInstanceID == nil {
				return 0
			}
			return *a.TaskInstanceID
		})
	}).loader()
	l.variableChanges = newPrefetch(nil, func(ctx context.Context, ids []int64) (map[int64][]*persistence.ActionVariable, error) {
		rows, err := store.ActionVariableList(ctx, ids)
		return groupBy(rows, err, func(v *persistence.ActionVariable) int64 { return v.ActionID })
	}).loader()
	l.held = newPrefetch(nil, func(ctx context.Context, ids []int64) (map[int64][]*persistence.Workflow, error) {
		rows, err := store.WorkflowHeldBy(ctx, ids)
		return groupBy(rows, err, func(w *persistence.Workflow) int64 {
			if w.ExecutorID == nil {
				return 0
			}
			return *w.ExecutorID
		})
	}).loader()
	l.attributes = newPrefetch(l.siblingIDs, func(ctx context.Context, ids []int64) (map[int64]map[string]persistence.AttributeValue, error) {
		return store.WorkflowAttributeMaps(ctx, ids)
	}).loader()
	l.pendingRemote = newPrefetch(func([]int64) []int64 {
		var out []int64
		for _, w := range l.siblingList() {
			if w.Status == persistence.StatusWaiting {
				out = append(out, w.ID)
			}
		}
		return out
	}, store.PendingRemoteFunctions).loader()
	return l
}

// byKey indexes rows by a key.
func byKey[K comparable, V any](rows []V, err error, key func(V) K) (map[K]V, error) {
	if err != nil {
		return nil, err
	}
	out := make(map[K]V, len(rows))
	for _, r := range rows {
		out[key(r)] = r
	}
	return out, nil
}

// groupBy groups rows by a key, keeping their order.
func groupBy[K comparable, V any](rows []V, err error, key func(V) K) (map[K][]V, error) {
	if err != nil {
		return nil, err
	}
	out := map[K][]V{}
	for _, r := range rows {
		out[key(r)] = append(out[key(r)], r)
	}
	return out, nil
}

// perPage loads pages of per-workflow rows: one statement per distinct page, for all its workflows.
func perPage[V any](ctx context.Context, keys []pageKey, list func(context.Context, []int64, persistence.PageParams) ([]V, error), workflowOf func(V) int64) (map[pageKey][]V, error) {
	byPage := map[persistence.PageParams][]int64{}
	for _, k := range keys {
		byPage[k.Page] = append(byPage[k.Page], k.WorkflowID)
	}
	out := make(map[pageKey][]V, len(keys))
	for page, ids := range byPage {
		rows, err := list(ctx, ids, page)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			k := pageKey{WorkflowID: workflowOf(r), Page: page}
			out[k] = append(out[k], r)
		}
	}
	return out, nil
}
