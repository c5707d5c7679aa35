package graph

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnflow/cairn/graph/model"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// maxStartMany bounds startWorkflows.
const maxStartMany = 1000

func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// startParams converts a start input to the engine's parameters; a debounce period that does not
// parse is an INVALID_INPUT on field("debounce.period").
func startParams(in *model.StartWorkflowInput, field func(string) string) (workflow.StartParams, error) {
	p := workflow.StartParams{
		Type: in.Type, ExternalID: str(in.ExternalID), BusinessKey: str(in.BusinessKey), LaunchToken: str(in.LaunchToken),
		Input: in.Input, Variables: in.Variables, StartAt: in.StartAt, IdempotencyKey: str(in.IdempotencyKey),
		Attributes:     in.Attributes,
		ConcurrencyKey: str(in.ConcurrencyKey),
	}
	if in.Priority != nil {
		p.Priority = *in.Priority
	}
	if d := in.Debounce; d != nil {
		period, err := workflow.ParsePeriod(field("debounce.period"), d.Period)
		if err != nil {
			return p, err
		}
		p.Debounce = &workflow.Debounce{Key: d.Key, Period: period}
	}
	return p, nil
}

// changeParams decodes the common input of the operations on one workflow.
func changeParams(ctx context.Context, id string, reason, key *string) (workflow.ChangeParams, error) {
	wid, err := decodeID("id", kindWorkflow, id)
	if err != nil {
		return workflow.ChangeParams{}, err
	}
	return workflow.ChangeParams{ID: wid, Reason: str(reason), Actor: actorOf(ctx), IdempotencyKey: str(key)}, nil
}

// tooMany refuses a startWorkflows call over the limit.
func tooMany(n int) error {
	if n > maxStartMany {
		return invalidInput("workflows", fmt.Sprintf("at most %d workflows per call, not %d", maxStartMany, n))
	}
	return nil
}

// notFoundAs turns a Store's ErrNotFound about what an argument names into a NOT_FOUND naming that
// argument and the ID as the client gave it; other errors pass unchanged.
func notFoundAs(err error, field, what, id string) error {
	if !errors.Is(err, persistence.ErrNotFound) {
		return err
	}
	return &workflow.Error{Code: workflow.CodeNotFound, Field: field, Message: fmt.Sprintf("no %s %s", what, id), Err: err}
}
