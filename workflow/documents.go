// Deployed documents: the compiler a node deploys them with, what it makes of one, and what a
// deploy returns.

package workflow

import (
	"bytes"
	"encoding/json"

	"github.com/cairnflow/cairn/persistence"
)

// DocumentCompiler turns a declarative document (a Serverless Workflow definition, YAML or JSON)
// into a Definition with handlers. cairn's compiler lives in internal/serverless; Install it on an
// engine with SetCompiler. Every node that runs deployed definitions needs one.
type DocumentCompiler interface {
	// Compile parses and checks a document. A document at fault gives an *Error with Code
	// INVALID_INPUT and Field the JSON pointer of the fault.
	Compile(source []byte) (*CompiledDocument, error)
}

// CompiledDocument is what a DocumentCompiler makes of a document.
type CompiledDocument struct {
	// Definition is the state machine with its handlers; its Type names the document.
	Definition Definition
	// Canonical is the document in a canonical JSON form: its sha256 tells one version from the next.
	Canonical []byte
	// Label is the document's own version (document.version), kept as a label.
	Label string
	// Schedule is the cron expression (or `@every <duration>`) the document asks to be started
	// on: deploying it keeps a schedule of its type, named as the type, in step ("": none).
	Schedule string
}

// MaxDocumentBytes bounds the source of a deployed document.
const MaxDocumentBytes = 1 << 20

// DeployResult is a deployed definition version.
type DeployResult struct {
	Definition *persistence.Definition
	// Created is false when the document was unchanged since a stored version, which is returned.
	Created bool
}

// OutputVariable is the variable that holds a workflow's output (a deployed definition's sets it
// when the workflow finishes).
const OutputVariable = "output"

// OutputOf returns a workflow's output: its variable OutputVariable (nil when unset).
func OutputOf(w *persistence.Workflow) json.RawMessage {
	if !bytes.Contains(w.Variables, []byte(`"`+OutputVariable+`"`)) {
		return nil
	}
	var vars map[string]json.RawMessage
	if json.Unmarshal(w.Variables, &vars) != nil {
		return nil
	}
	return vars[OutputVariable]
}
