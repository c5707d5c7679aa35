package graph

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph/model"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// The last subscription leaves while the hub rests after a read, and another comes and goes
// before the hub acts on it: the hub must still serve the subscriptions that come after. It
// used to pass the wake-up on to itself with a blocking send into a channel of one, which the
// second leaving had filled: the hub stopped for good while it counted as running, and every
// later subscription of the node waited for events that never came (a client's wait() hung in CI).
func TestHubServesSubscriptionsAfterTwoLeaveDuringItsRest(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		engine, r := liveSetup(t, store, 1000)
		h := r.hub
		h.readGap = time.Minute // the leaving comes during the rest after the hub's first read
		woken := make(chan struct{}, 1)
		h.restWoken = func() { // on the hub's goroutine
			h.readGap = hubReadGap
			s, _, err := h.register(context.Background(), persistence.WorkflowFilter{Types: []string{"test.other"}})
			if err == nil {
				h.unregister(s)
			}
			woken <- struct{}{}
		}
		ctx, cancel := context.WithCancel(t.Context())
		first, err := r.workflowEvents(ctx, &model.WorkflowFilter{Types: []string{"test.noop"}}, nil)
		require.NoError(t, err)
		cancel()
		for range first { // the subscription ends, and leaves the hub
		}
		select {
		case <-woken:
		case <-time.After(30 * time.Second):
			t.Fatal("the last subscription's leaving did not wake the hub")
		}

		later, err := r.workflowEvents(t.Context(), &model.WorkflowFilter{Types: []string{"test.noop"}}, nil)
		require.NoError(t, err)
		_, err = engine.Start(t.Context(), workflow.StartParams{Type: "test.noop"})
		require.NoError(t, err)
		receive(t, later, 1)
	})
}
