package graph

import (
	"context"
	"time"

	"github.com/cairnflow/cairn/workflow"
)

// pollMargin is what a long poll leaves of its request's time for the lease and the answer.
const pollMargin = time.Second

// pollWaitWithin shortens a long poll's wait so that the poll answers (with no task) before its
// request's deadline instead of being cut by it. A wait out of range is left for the engine to
// refuse.
func pollWaitWithin(ctx context.Context, waitMs *int) *int {
	deadline, ok := ctx.Deadline()
	if !ok || waitMs == nil || *waitMs <= 0 || *waitMs > int(workflow.MaxPollWait/time.Millisecond) {
		return waitMs
	}
	left := int((time.Until(deadline) - pollMargin) / time.Millisecond)
	if *waitMs <= left {
		return waitMs
	}
	capped := max(left, 0)
	return &capped
}
