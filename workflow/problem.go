package workflow

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
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

// parseProblem reads a Problem from its JSON text (nil when text is not one: it needs a type and a
// title or status).
func parseProblem(text string) *Problem {
	if !strings.HasPrefix(strings.TrimSpace(text), "{") {
		return nil
	}
	var p Problem
	if json.Unmarshal([]byte(text), &p) != nil || p.Type == "" || (p.Title == "" && p.Status == 0) {
		return nil
	}
	return &p
}

// stateTextOf is what an action says about a failure: a Problem's summary, or the error's text.
func stateTextOf(text string) string {
	if p := parseProblem(text); p != nil && p.Summary() != "" {
		return p.Summary()
	}
	return text
}

// newIncident names one internal failure: the ID that its Problem shows and its log line carries.
func newIncident() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand panics rather than return an error)
	return hex.EncodeToString(b)
}

// incidentProblem is what the API shows of an internal failure whose details (a panic's stack,
// with source paths) stay in the node's log.
func incidentProblem(incident string) *Problem {
	return &Problem{Type: ProblemTypeRuntime, Status: 500, Title: "internal error",
		Detail: fmt.Sprintf("incident %s: see the node's log", incident)}
}

// nodeDiedProblem is the failure of an attempt whose node died (or stopped heartbeating) while it
// ran: the attempt counts, so a workflow that kills its nodes ends after its retry policy.
func nodeDiedProblem(state string) *Problem {
	return &Problem{Type: ProblemTypeRuntime, Status: 500, Title: "node died",
		Detail: fmt.Sprintf("the node running this attempt of state %q died or stopped heartbeating before the attempt ended", state)}
}
