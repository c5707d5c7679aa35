package workflow

import (
	"encoding/json"
	"strings"
)

// Problem types of the failures the engine itself gives attempts.
const (
	// ProblemTypeRuntime: the node failed to run the attempt (a panic, a node that died).
	ProblemTypeRuntime = "https://serverlessworkflow.io/spec/1.0.0/errors/runtime"
)

// Problem is an attempt's failure as RFC 7807 Problem Details. A failed attempt stores it, as JSON,
// in the workflow's lastError and the task instance's error; its state text is the short summary.
type Problem struct {
	Type     string `json:"type"`
	Status   int    `json:"status"`
	Title    string `json:"title,omitempty"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`
}

// Error is the problem as JSON: what lastError stores.
func (p *Problem) Error() string {
	b, _ := json.Marshal(p)
	return string(b)
}

// Summary is the problem for people (an action's state text): its title and detail, never JSON.
func (p *Problem) Summary() string {
	switch {
	case p.Detail == "":
		return p.Title
	case p.Title == "":
		return p.Detail
	}
	return p.Title + ": " + p.Detail
}

// ParseProblem reads a Problem from its JSON text (nil when text is not one: it needs a type and a
// title or status).
func ParseProblem(text string) *Problem {
	if !strings.HasPrefix(strings.TrimSpace(text), "{") {
		return nil
	}
	var p Problem
	if json.Unmarshal([]byte(text), &p) != nil || p.Type == "" || (p.Title == "" && p.Status == 0) {
		return nil
	}
	return &p
}
