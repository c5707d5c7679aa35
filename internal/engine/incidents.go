// The Problems the engine records for failures that are not a step's own: a panic (an incident in
// the node's log) and a node that died.

package engine

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/cairnflow/cairn/workflow"
)

// stateTextOf is what an action says about a failure: a Problem's summary, or the error's text.
func stateTextOf(text string) string {
	if p := workflow.ParseProblem(text); p != nil && p.Summary() != "" {
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
func incidentProblem(incident string) *workflow.Problem {
	return &workflow.Problem{Type: workflow.ProblemTypeRuntime, Status: 500, Title: "internal error",
		Detail: fmt.Sprintf("incident %s: see the node's log", incident)}
}

// nodeDiedProblem is the failure of an attempt whose node died (or stopped heartbeating) while it
// ran: the attempt counts, so a workflow that kills its nodes ends after its retry policy.
func nodeDiedProblem(state string) *workflow.Problem {
	return &workflow.Problem{Type: workflow.ProblemTypeRuntime, Status: 500, Title: "node died",
		Detail: fmt.Sprintf("the node running this attempt of state %q died or stopped heartbeating before the attempt ended", state)}
}
