package workflow

import "time"

// What counts as alive, late or stuck (see docs/operations.md, "Stuck workflows").
const (
	// RemoteWorkerAliveWithin is how recently a remote worker must have polled to count as alive:
	// a worker in a long poll is recorded again every RemoteWorkerRefresh.
	RemoteWorkerAliveWithin = 30 * time.Second
	// RemoteWorkerRefresh is how often a poll that waits records its worker again.
	RemoteWorkerRefresh = 10 * time.Second
	// StuckDueFor is how long a workflow may be due and unclaimed, with a live executor for it,
	// before it counts as stuck (the nodes are behind).
	StuckDueFor = time.Minute
	// StuckPastDeadline is how long an attempt may run past its deadline before its workflow
	// counts as stuck (a step that ignores its context, or a node that died holding it).
	StuckPastDeadline = 10 * time.Second
)
