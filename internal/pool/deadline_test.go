package pool_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// A running step's deadline is its state's timeout after its claim, whether the workflow was
// claimed for it or kept claimed from the step before: 5 minutes shows 5 minutes, 3 seconds 3.
func TestStepDeadlineIsTheStatesTimeout(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		next := make(chan struct{})
		wait := func(to string) workflow.StepFunc {
			return func(ctx workflow.StepContext) (workflow.Next, error) {
				select {
				case <-next:
				case <-ctx.Done():
					return workflow.Next{}, ctx.Err()
				}
				return workflow.MoveTo(to), nil
			}
		}
		def := workflow.Definition{Type: "t.deadlines", States: []workflow.State{
			{Name: "long", Kind: workflow.Start, Timeout: 5 * time.Minute, Handler: wait("short"), Next: []string{"short"}},
			{Name: "short", Kind: workflow.Normal, Timeout: 3 * time.Second, Handler: wait("plain"), Next: []string{"plain"}},
			{Name: "plain", Kind: workflow.Normal, Handler: wait("done"), Next: []string{"done"}},
			{Name: "done", Kind: workflow.End}}}
		b := setup(t, store, def)
		b.startWorker(t, fastOptions())
		w := b.start(t, "t.deadlines", `{}`)
		for _, want := range []struct {
			state   string
			timeout time.Duration
		}{{"long", 5 * time.Minute}, {"short", 3 * time.Second}, {"plain", workflow.DefaultStepTimeout}} {
			running := b.waitFor(t, w.ID, want.state+" running", func(w *persistence.Workflow) bool {
				return w.State == want.state && w.Status == persistence.StatusExecuting
			})
			require.NotNil(t, running.StepDeadline)
			require.WithinDuration(t, running.Modified.Add(want.timeout), *running.StepDeadline, time.Second, "state %s", want.state)
			next <- struct{}{}
		}
		b.waitStatus(t, w.ID, persistence.StatusFinished)
	})
}
