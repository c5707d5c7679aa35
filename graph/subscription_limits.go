package graph

import (
	"context"
	"sync/atomic"

	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cairnflow/cairn/graph/internal/request"
)

// codeSubscriptionLimit refuses a subscription over Config.MaxSubscriptionsPerConnection or
// Config.MaxSubscriptions.
const codeSubscriptionLimit = "SUBSCRIPTION_LIMIT_EXCEEDED"

// subscriptionSlots counts the subscriptions a node serves, and those of each websocket
// connection, against their limits: each subscription holds a goroutine and a buffer, so an
// unbounded number on one socket exhausts the node.
type subscriptionSlots struct {
	perConnection, perNode int64
	open                   atomic.Int64
}

// acquire takes a slot for a subscription of the connection in ctx (if any); release gives it
// back, once, when the subscription ends. A nil subscriptionSlots limits nothing.
func (s *subscriptionSlots) acquire(ctx context.Context) (release func(), err error) {
	if s == nil {
		return func() {}, nil
	}
	st := request.ConnectionOf(ctx)
	if st != nil {
		if st.Subscriptions.Add(1) > s.perConnection {
			st.Subscriptions.Add(-1)
			return nil, subscriptionLimitError("this connection already has %d subscriptions, the most allowed; end one or open another connection", s.perConnection)
		}
	}
	if s.open.Add(1) > s.perNode {
		s.open.Add(-1)
		if st != nil {
			st.Subscriptions.Add(-1)
		}
		return nil, subscriptionLimitError("this node already serves %d subscriptions, the most allowed; try again later or another node", s.perNode)
	}
	var done atomic.Bool
	return func() {
		if done.CompareAndSwap(false, true) {
			s.open.Add(-1)
			if st != nil {
				st.Subscriptions.Add(-1)
			}
		}
	}, nil
}

func subscriptionLimitError(format string, limit int64) *gqlerror.Error {
	return &gqlerror.Error{Message: gqlerror.Errorf(format, limit).Message, Extensions: map[string]any{"code": codeSubscriptionLimit}}
}
