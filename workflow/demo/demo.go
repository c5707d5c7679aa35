// Package demo holds the demo definitions that `cairn serve --demo`, the README, the tests and the
// benchmarks use: demo.order, demo.approval, demo.fanout and bench.noop.
package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// OrderInput is the input of demo.order.
type OrderInput struct {
	// FailFirstCharge makes the first attempt of the charge step fail (to show a retry).
	FailFirstCharge bool `json:"failFirstCharge"`
	// ShipDelayMs is how long the ship step takes.
	ShipDelayMs int `json:"shipDelayMs"`
	// Amount is shown in the state text; any number.
	Amount float64 `json:"amount"`
}

// FanoutInput is the input of demo.fanout.
type FanoutInput struct {
	// Children is how many demo.order children to start.
	Children int `json:"children"`
	// ChildInput is the input of each child.
	ChildInput OrderInput `json:"childInput"`
}

// Definitions returns the demo definitions.
func Definitions() []workflow.Definition {
	fastRetry := &workflow.RetryPolicy{MaxAttempts: 3, MinBackoff: 50 * time.Millisecond, MaxBackoff: time.Second, Jitter: 0.1}
	return []workflow.Definition{
		{
			Type:        "demo.order",
			Description: "An order: validate, charge (a side effect), ship, done.",
			States: []workflow.State{
				{Name: "validate", Kind: workflow.Start, Handler: validate, Next: []string{"charge", "rejected"}},
				{Name: "charge", Kind: workflow.Normal, Handler: charge, Next: []string{"ship"}, Retry: fastRetry},
				{Name: "ship", Kind: workflow.Normal, Handler: ship, Next: []string{"done"}, Timeout: 5 * time.Minute},
				{Name: "done", Kind: workflow.End},
				{Name: "rejected", Kind: workflow.ErrorKind},
			},
		},
		{
			Type:        "demo.approval",
			Description: "Waits for the signal approve, then finishes.",
			States: []workflow.State{
				{Name: "request", Kind: workflow.Start, Handler: request, Next: []string{"await"}},
				{Name: "await", Kind: workflow.Wait, WaitFor: &workflow.WaitFor{Signal: "approve"}, Handler: approved, Next: []string{"approved"}},
				{Name: "approved", Kind: workflow.End},
			},
		},
		{
			Type:        "demo.fanout",
			Description: "Starts input.children demo.order children and finishes when all have.",
			States: []workflow.State{
				{Name: "spawn", Kind: workflow.Start, Handler: spawn, Next: []string{"await"}},
				{Name: "await", Kind: workflow.Wait, WaitFor: &workflow.WaitFor{Children: true}, Next: []string{"done"}},
				{Name: "done", Kind: workflow.End},
			},
		},
		{
			Type:        "bench.noop",
			Description: "One state that finishes at once (for benchmarks).",
			States: []workflow.State{
				{Name: "run", Kind: workflow.Start, Handler: noop, Next: []string{"done"}},
				{Name: "done", Kind: workflow.End},
			},
		},
	}
}

// Registrar is what registers definitions: a cairn.Node.
type Registrar interface {
	Register(ctx context.Context, def workflow.Definition) (*persistence.Definition, error)
}

// Register registers every demo definition with an engine.
func Register(ctx context.Context, e Registrar) error {
	for _, d := range Definitions() {
		if _, err := e.Register(ctx, d); err != nil {
			return fmt.Errorf("error registering demo definition %s: %w", d.Type, err)
		}
	}
	return nil
}

func validate(ctx workflow.StepContext) (workflow.Next, error) {
	var in OrderInput
	if err := ctx.Input(&in); err != nil {
		return workflow.Fail(err.Error()), nil
	}
	if in.Amount < 0 {
		return workflow.MoveTo("rejected").WithText("negative amount"), nil
	}
	return workflow.MoveTo("charge").WithText(fmt.Sprintf("order of %.2f is valid", in.Amount)), nil
}

func charge(ctx workflow.StepContext) (workflow.Next, error) {
	var in OrderInput
	if err := ctx.Input(&in); err != nil {
		return workflow.Next{}, err
	}
	chargeID, err := workflow.SideEffect(ctx, "chargeId", func() (string, error) {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		return "ch_" + hex.EncodeToString(b), nil
	})
	if err != nil {
		return workflow.Next{}, err
	}
	if in.FailFirstCharge && ctx.Attempt() == 1 {
		return workflow.Next{}, errors.New("payment gateway timed out (first attempt fails on purpose)")
	}
	if err := ctx.SetVar("chargeId", chargeID); err != nil {
		return workflow.Next{}, err
	}
	ctx.Log("charged", chargeID)
	return workflow.MoveTo("ship").WithText("charged " + chargeID), nil
}

func ship(ctx workflow.StepContext) (workflow.Next, error) {
	var in OrderInput
	if err := ctx.Input(&in); err != nil {
		return workflow.Next{}, err
	}
	if in.ShipDelayMs > 0 {
		select {
		case <-ctx.Done():
			return workflow.Next{}, ctx.Err()
		case <-time.After(time.Duration(in.ShipDelayMs) * time.Millisecond):
		}
	}
	if err := ctx.SetVar("shipped", true); err != nil {
		return workflow.Next{}, err
	}
	return workflow.MoveTo("done").WithText("shipped"), nil
}

func request(ctx workflow.StepContext) (workflow.Next, error) {
	return workflow.MoveTo("await").WithText("waiting for approve"), nil
}

func approved(ctx workflow.StepContext) (workflow.Next, error) {
	if sig := ctx.Signal(); sig != nil && len(sig.Payload) > 0 {
		if err := ctx.SetVar("approval", sig.Payload); err != nil {
			return workflow.Next{}, err
		}
	}
	return workflow.MoveTo("approved"), nil
}

func spawn(ctx workflow.StepContext) (workflow.Next, error) {
	var in FanoutInput
	if err := ctx.Input(&in); err != nil {
		return workflow.Next{}, err
	}
	if in.Children < 0 || in.Children > 10000 {
		return workflow.Fail(fmt.Sprintf("children must be between 0 and 10000, not %d", in.Children)), nil
	}
	for i := range in.Children {
		ctx.StartChild(workflow.ChildRequest{Type: "demo.order", Input: mustJSON(in.ChildInput), BusinessKey: fmt.Sprintf("child-%d", i)})
	}
	return workflow.MoveTo("await").WithText(fmt.Sprintf("started %d children", in.Children)), nil
}

func noop(ctx workflow.StepContext) (workflow.Next, error) { return workflow.Finish(), nil }
