package serverless

// A task's flow directive (then: continue | exit | end | <task>) is interpreted here and only
// here: the compiler checks it, and both the runtime (nav.go) and the deploy-time graph of the
// states (explore.go) ask afterThen where it goes.

// The flow directives besides the name of a task ("" is continue).
const (
	thenContinue = "continue"
	thenExit     = "exit"
	thenEnd      = "end"
)

// flowKind is what a flow directive does once its task completed.
type flowKind int

const (
	// flowEnter enters a task of the same list.
	flowEnter flowKind = iota + 1
	// flowExit leaves a list: its owner loops again (for) or completes.
	flowExit
	// flowEndBranch ends the child workflow that runs a fork's branch, with the branch's output.
	flowEndBranch
)

// flow is where the flow goes after a task completed.
type flow struct {
	kind flowKind
	to   *task     // flowEnter: the task to enter
	list *taskList // flowExit: the list to leave
	// end leaves every composite task (then: end): the list left is the document's.
	end bool
}

// afterThen is where the flow goes after task t completed with flow directive then. A task of a
// fork's branch ends its branch: when it is the branch itself, whatever its directive, and on
// then: end anywhere inside it.
func afterThen(t *task, then string) flow {
	if t.list.fork || (then == thenEnd && inBranch(t)) {
		return flow{kind: flowEndBranch}
	}
	switch then {
	case thenEnd:
		return flow{kind: flowExit, list: rootList(t), end: true}
	case thenExit:
		return flow{kind: flowExit, list: t.list}
	case "", thenContinue:
		if t.index+1 < len(t.list.tasks) {
			return flow{kind: flowEnter, to: t.list.tasks[t.index+1]}
		}
		return flow{kind: flowExit, list: t.list}
	default:
		return flow{kind: flowEnter, to: t.list.byName(then)}
	}
}

// inBranch reports whether a task lies inside a fork's branch (it runs in a branch's child
// workflow).
func inBranch(t *task) bool {
	for l := t.list; l != nil; l = l.owner.list {
		if l.fork {
			return true
		}
	}
	return false
}

// rootList is the document's list of tasks, around task t.
func rootList(t *task) *taskList {
	l := t.list
	for l.owner.list != nil {
		l = l.owner.list
	}
	return l
}

// checkThen refuses a flow directive that names no task of the list.
func checkThen(l *taskList, then, ptr string) error {
	switch then {
	case "", thenContinue, thenExit, thenEnd:
		return nil
	}
	if l.byName(then) == nil {
		return faultAt(ptr, "then: %q names no task of this list", then)
	}
	return nil
}

// branchDirective reports whether a task that is a fork's branch may have flow directive then:
// it runs on its own, so it can only go on or end.
func branchDirective(then string) bool {
	return then == "" || then == thenContinue || then == thenExit || then == thenEnd
}
