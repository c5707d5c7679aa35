package maintenance

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnflow/cairn/persistence"
)

// CancelListener cancels the steps running on this node whose workflows were cancelled or paused
// anywhere, on the cancel hints of the node's notifier. It only reads and cancels this node's own
// steps: every node runs one.
type CancelListener struct {
	listen func(ctx context.Context)
	run    runner
}

// NewCancelListener returns the service over a listen loop that runs until its ctx ends (the
// engine's cancel listener).
func NewCancelListener(listen func(ctx context.Context)) (*CancelListener, error) {
	if listen == nil {
		return nil, errors.New("error configuring the cancel listener: no listen function")
	}
	return &CancelListener{listen: listen, run: runner{name: "cancel listener"}}, nil
}

// Start implements Service.
func (l *CancelListener) Start(ctx context.Context) error { return l.run.start(ctx, l.listen) }

// Stop implements Service.
func (l *CancelListener) Stop() { l.run.stop() }

// WakeRelay carries the node's hints (wake-ups, change events, cancels, remote tasks) between the
// nodes sharing a PostgreSQL (LISTEN/NOTIFY) and delivers them to this node's subscribers; on
// other databases hints stay in the node. Every node runs one.
type WakeRelay struct {
	notifier *persistence.Notifier
	run      runner
}

// NewWakeRelay returns the service over a notifier.
func NewWakeRelay(notifier *persistence.Notifier) (*WakeRelay, error) {
	if notifier == nil {
		return nil, fmt.Errorf("error configuring the wake-up relay: no notifier")
	}
	return &WakeRelay{notifier: notifier, run: runner{name: "wake-up relay"}}, nil
}

// Start implements Service.
func (r *WakeRelay) Start(ctx context.Context) error { return r.run.start(ctx, r.notifier.Run) }

// Stop implements Service.
func (r *WakeRelay) Stop() { r.run.stop() }
