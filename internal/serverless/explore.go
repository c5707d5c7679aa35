package serverless

import (
	"sort"
	"time"
)

// defaultBackoff is the engine's first retry delay for a step that could not run.
const defaultBackoff = time.Second

// graph lists where each step may go, for the definition's states (the engine lets a step move
// only to a state its state lists, and clients draw the graph from them). It follows the same
// moves as a run (nav.go) with every choice taken both ways: each expression may fail, each `if`
// may skip, each loop may go on or end, each try may catch or not. Its sets are computed once per
// move and task, and again until none grows (a flow of skipped tasks may loop).
type graph struct {
	p       *program
	memo    map[string]map[string]bool
	busy    map[string]bool
	done    map[string]bool
	changed bool
}

// successors lists the next states of every state: the start (key "") and each task to run.
func (p *program) successors() map[string][]string {
	g := &graph{p: p, memo: map[string]map[string]bool{}}
	out := map[string][]string{}
	for {
		g.changed, g.busy, g.done = false, map[string]bool{}, map[string]bool{}
		sets := map[string]map[string]bool{"": g.start()}
		for _, t := range p.leaves {
			sets[t.path] = g.leaf(t)
			if t.kind == kindFork || (t.kind == kindRun && t.run.await) {
				sets[t.path+awaitSuffix] = g.awaited(t)
			}
		}
		if !g.changed {
			for k, set := range sets {
				out[k] = sorted(set)
			}
			return out
		}
	}
}

func sorted(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// cached computes the set of a move once per pass; a move met again while it is being computed
// (a loop) gives what it had so far, and the pass is repeated until nothing grows.
func (g *graph) cached(key string, compute func(add func(map[string]bool))) map[string]bool {
	if g.done[key] || g.busy[key] {
		return g.memo[key]
	}
	g.busy[key] = true
	set := map[string]bool{}
	compute(func(s map[string]bool) {
		for k := range s {
			set[k] = true
		}
	})
	g.busy[key] = false
	g.done[key] = true
	if len(set) > len(g.memo[key]) {
		g.changed = true
		g.memo[key] = set
	}
	return g.memo[key]
}

func one(s string) map[string]bool { return map[string]bool{s: true} }

func (g *graph) start() map[string]bool {
	set := map[string]bool{}
	if g.p.root.inputFrom != nil || g.p.root.inputSchema != nil {
		set[stateFault] = true
	}
	for k := range g.enter(g.p.root.body.tasks[0]) {
		set[k] = true
	}
	// A branch child starts at its branch's task.
	for _, t := range g.p.leaves {
		if t.kind != kindFork {
			continue
		}
		set[stateFault] = true
		for _, b := range t.body.tasks {
			for k := range g.enter(b) {
				set[k] = true
			}
		}
	}
	return set
}

// leaf mirrors runTask.
func (g *graph) leaf(t *task) map[string]bool {
	return g.cached("leaf:"+t.path, func(add func(map[string]bool)) {
		add(g.fault(t)) // input.from, the task itself
		if t.kind == kindRaise {
			return
		}
		if t.kind == kindListen && t.listenSpec.waitsOn() {
			add(one(t.path)) // an event that does not match: it listens on
		}
		if f := foreachOf(t); f != nil {
			add(g.enter(f)) // the events taken are processed by its foreach
			return
		}
		if t.kind == kindFork || (t.kind == kindRun && t.run.await) {
			add(one(t.path + awaitSuffix))
			return
		}
		for _, c := range t.cases {
			add(g.complete(t, c.then))
		}
		add(g.complete(t, t.then))
	})
}

// awaited mirrors awaitHandler.
func (g *graph) awaited(t *task) map[string]bool {
	return g.cached("await:"+t.path, func(add func(map[string]bool)) {
		add(g.fault(t))
		add(g.complete(t, t.then))
	})
}

// enter mirrors run.enter.
func (g *graph) enter(t *task) map[string]bool {
	return g.cached("enter:"+t.path, func(add func(map[string]bool)) {
		if t.cond != nil {
			add(g.fault(t))
			add(g.next(t, thenContinue))
		}
		if len(t.exts) > 0 {
			add(g.extend(t))
			return
		}
		add(g.enterTask(t))
	})
}

// enterTask mirrors run.enterTask.
func (g *graph) enterTask(t *task) map[string]bool {
	return g.cached("enterTask:"+t.path, func(add func(map[string]bool)) {
		if !composite(t.kind) {
			add(one(t.path))
			return
		}
		if t.inputFrom != nil || t.inputSchema != nil {
			add(g.fault(t))
		}
		if t.kind == kindFor {
			add(g.fault(t))
			add(g.complete(t, t.then))
			add(g.iterate(t))
			return
		}
		add(g.enter(t.body.tasks[0]))
	})
}

// iterate mirrors run.iterate.
func (g *graph) iterate(t *task) map[string]bool {
	return g.cached("iterate:"+t.path, func(add func(map[string]bool)) {
		if t.while != nil {
			add(g.fault(t))
			add(g.complete(t, t.then))
		}
		add(g.enter(t.body.tasks[0]))
	})
}

// complete mirrors run.complete.
func (g *graph) complete(t *task, then string) map[string]bool {
	return g.cached("complete:"+t.path+"\x00"+then, func(add func(map[string]bool)) {
		if t.outputAs != nil || t.exportAs != nil || t.outputSchema != nil || t.exportSchema != nil {
			add(g.fault(t))
		}
		if t.kind == kindRoot {
			add(one(stateEnd))
			return
		}
		for _, i := range t.exts {
			if a := g.p.exts[i].after; a != nil {
				add(g.enter(a.body.tasks[0]))
			}
		}
		add(g.next(t, then))
	})
}

// next mirrors run.next: where it goes is afterThen's.
func (g *graph) next(t *task, then string) map[string]bool {
	if set, ok := g.nextInExtension(t, then); ok {
		return set
	}
	f := afterThen(t, then)
	switch f.kind {
	case flowEndBranch:
		return one(stateEnd)
	case flowExit:
		return g.exitList(f.list)
	default:
		return g.enter(f.to)
	}
}

// exitList mirrors run.exitList.
func (g *graph) exitList(l *taskList) map[string]bool {
	if l.owner.kind == kindExt {
		return g.leaveExtension(l, false)
	}
	return g.cached("exit:"+l.path, func(add func(map[string]bool)) {
		if l.owner.kind == kindFor {
			add(g.iterate(l.owner))
		}
		add(g.complete(l.owner, l.owner.then))
	})
}

// fault mirrors run.fault: every try around t that is not running its catch may catch or not.
func (g *graph) fault(t *task) map[string]bool {
	return g.cached("fault:"+t.path, func(add func(map[string]bool)) {
		add(one(stateFault))
		for l := t.list; l != nil && !l.fork; l = l.owner.list {
			owner := l.owner
			if owner.kind == kindTry && !l.catch {
				c := owner.catch
				if c.retry != nil {
					add(g.enter(owner.body.tasks[0]))
				}
				if c.do != nil {
					add(g.enter(c.do.tasks[0]))
				} else {
					add(g.complete(owner, owner.then))
				}
			}
			if owner.list == nil {
				break
			}
		}
		if e := extensionOf(t); e != nil {
			for _, x := range e.targets {
				add(g.fault(x))
			}
		}
	})
}
