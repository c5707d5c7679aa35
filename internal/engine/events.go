package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// PublishEvent delivers a CloudEvent (a JSON object with specversion, id, source and type) to
// every workflow waiting for a signal named by its type, as that signal with the event as its
// payload. A workflow that is not waiting yet does not get it (signal it by ID for that). The same
// event (source and id) published again is delivered once to each workflow. It also starts a
// workflow of each deployed type the event starts (a document's schedule.on), once per event. It
// returns the workflows it was delivered to, then those it started.
func (e *Engine) PublishEvent(ctx context.Context, event json.RawMessage) ([]*persistence.Workflow, error) {
	if err := workflow.CheckJSON("event", event); err != nil {
		return nil, err
	}
	var ev map[string]any
	if err := json.Unmarshal(event, &ev); err != nil || ev == nil {
		return nil, invalid("event", "an event must be a JSON object (a CloudEvent)")
	}
	attrs := map[string]string{}
	for _, a := range []string{"specversion", "id", "source", "type"} {
		s, _ := ev[a].(string)
		if s == "" {
			return nil, invalid("event."+a, "a CloudEvent needs %s, a non-empty string", a)
		}
		if err := workflow.CheckString("event."+a, s, workflow.MaxKeyLength); err != nil {
			return nil, err
		}
		attrs[a] = s
	}
	ids, err := e.store.WorkflowWaitingForSignal(ctx, attrs["type"], workflow.MaxEventDeliveries)
	if err != nil {
		return nil, err
	}
	if ids, err = e.waitingAmong(ctx, attrs["type"], ids); err != nil {
		return nil, err
	}
	key := fmt.Sprintf("event:%s:%s", attrs["source"], attrs["id"])
	if len(key) > workflow.MaxKeyLength {
		key = key[:workflow.MaxKeyLength]
	}
	var out []*persistence.Workflow
	for _, id := range ids {
		w, err := e.Signal(ctx, workflow.SignalParams{ID: id, Name: attrs["type"], Payload: event, IdempotencyKey: key, Actor: "publishEvent"})
		if err == nil {
			out = append(out, w)
			continue
		}
		if c := workflow.CodeOf(err); c == workflow.CodeConflict || c == workflow.CodeNotFound {
			continue // it ended, or was removed, since it was listed: it no longer listens
		}
		return out, err
	}
	started, err := e.startOnEvent(ctx, attrs["type"], key, event)
	return append(out, started...), err
}
