package pool_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/pool"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// The flow collector reads, per type, the workflows holding a concurrency slot, those waiting for
// one, and the rate keys with no slot free now.
func TestFlowMetricsCountRunningWaitingAndThrottled(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		release := make(chan struct{})
		held := workflow.Definition{Type: "t.held", FlowControl: &workflow.FlowControl{Concurrency: &workflow.Concurrency{Limit: 1, Key: ".customer"}},
			States: []workflow.State{
				{Name: "start", Kind: workflow.Start, Next: []string{"done"}, Handler: func(ctx workflow.StepContext) (workflow.Next, error) {
					<-release
					return workflow.MoveTo("done"), nil
				}},
				{Name: "done", Kind: workflow.End}}}
		rated := workflow.Definition{Type: "t.rated", FlowControl: &workflow.FlowControl{RateLimit: &workflow.RateLimit{Limit: 1, Period: time.Hour}},
			States: []workflow.State{
				{Name: "start", Kind: workflow.Start, Next: []string{"done"}, Handler: func(ctx workflow.StepContext) (workflow.Next, error) {
					return workflow.MoveTo("done"), nil
				}},
				{Name: "done", Kind: workflow.End}}}
		b := setup(t, store, held, rated)
		b.startWorker(t, steadyOptions())
		defer close(release)
		first := b.start(t, "t.held", `{"customer":"c1"}`)
		b.waitStatus(t, first.ID, persistence.StatusExecuting)
		b.start(t, "t.held", `{"customer":"c1"}`)
		b.start(t, "t.held", `{"customer":"c1"}`)
		b.start(t, "t.held", `{"customer":"c2"}`) // a slot of its own: runs
		r1 := b.start(t, "t.rated", `{}`)
		b.waitStatus(t, r1.ID, persistence.StatusFinished)
		b.start(t, "t.rated", `{}`) // the next slot is an hour away

		c := pool.NewFlowCollector(b.engine)
		want := `
# HELP cairn_flow_running Workflows holding a concurrency slot of their type's flow control.
# TYPE cairn_flow_running gauge
cairn_flow_running{type="t.held"} 2
# HELP cairn_flow_throttled_keys Rate keys of a type whose next step start must wait for the rate limit (no slot free now).
# TYPE cairn_flow_throttled_keys gauge
cairn_flow_throttled_keys{type="t.rated"} 1
# HELP cairn_flow_waiting Due workflows waiting for a concurrency slot of their type's flow control.
# TYPE cairn_flow_waiting gauge
cairn_flow_waiting{type="t.held"} 2
`
		require.Eventually(t, func() bool {
			return testutil.CollectAndCompare(c, strings.NewReader(want)) == nil
		}, 30*time.Second, 50*time.Millisecond, "%v", testutil.CollectAndCompare(c, strings.NewReader(want)))
	})
}
