package graph

import (
	"github.com/cairnflow/cairn/graph/model"
	"github.com/cairnflow/cairn/persistence"
)

// payload wraps an operation's result.
func payload(w *persistence.Workflow, err error) (*model.WorkflowPayload, error) {
	if err != nil {
		return nil, err
	}
	return &model.WorkflowPayload{Workflow: w}, nil
}
