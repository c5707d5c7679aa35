package serverless

import (
	"encoding/json"
	"fmt"

	"github.com/cairnflow/cairn/workflow"
)

// The standard error types of the DSL.
const (
	errTypeValidation    = "https://serverlessworkflow.io/spec/1.0.0/errors/validation"
	errTypeExpression    = "https://serverlessworkflow.io/spec/1.0.0/errors/expression"
	errTypeRuntime       = "https://serverlessworkflow.io/spec/1.0.0/errors/runtime"
	errTypeCommunication = "https://serverlessworkflow.io/spec/1.0.0/errors/communication"
	errTypeTimeout       = "https://serverlessworkflow.io/spec/1.0.0/errors/timeout"
)

// Problem is an error as the DSL describes it: RFC 7807 Problem Details. A workflow that faults
// keeps it, as JSON, in its lastError.
type Problem struct {
	Type     string `json:"type"`
	Status   int    `json:"status"`
	Title    string `json:"title,omitempty"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`
}

// value is the problem as a jq value, for catch filters and `as` variables.
func (p *Problem) value() map[string]any {
	m := map[string]any{"type": p.Type, "status": p.Status, "instance": p.Instance}
	if p.Title != "" {
		m["title"] = p.Title
	}
	if p.Detail != "" {
		m["detail"] = p.Detail
	}
	return m
}

// summary is the problem for people, as a state text: its title and detail, never its JSON.
func (p *Problem) summary() string {
	if s := (&workflow.Problem{Title: p.Title, Detail: p.Detail}).Summary(); s != "" {
		return s
	}
	return p.Type
}

func (p *Problem) String() string {
	b, _ := json.Marshal(p)
	return string(b)
}

// expressionProblem is the fault of an expression that failed at run time.
func expressionProblem(instance string, err error) *Problem {
	if p := budgetProblem(instance, err); p != nil {
		return p
	}
	return &Problem{Type: errTypeExpression, Status: 400, Title: "Expression Error", Detail: err.Error(), Instance: instance}
}

// faultAt is a deploy-time refusal of a document: INVALID_INPUT with the JSON pointer of the fault
// as its field.
func faultAt(ptr, format string, args ...any) error {
	if ptr == "" {
		ptr = "/"
	}
	return &workflow.Error{Code: workflow.CodeInvalidInput, Field: ptr, Message: fmt.Sprintf(format, args...)}
}
