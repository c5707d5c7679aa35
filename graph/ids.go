package graph

import (
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/cairnflow/cairn/workflow"
)

// The kinds of object an opaque ID can name.
const (
	kindWorkflow     = "Workflow"
	kindAction       = "Action"
	kindTaskInstance = "TaskInstance"
	kindExecutor     = "Executor"
	kindDefinition   = "WorkflowDefinition"
	kindSideEffect   = "SideEffect"
	kindSignal       = "Signal"
	kindForm         = "FormSubmission"
	kindSchedule     = "Schedule"
	kindActivityLog  = "ActivityLog"
	kindBulk         = "BulkOperation"
	kindAudit        = "AuditEntry"
	kindAlertRule    = "AlertRule"
	kindAlertDeliv   = "AlertDelivery"
)

// encodeID makes the opaque ID of a row: base64url of "Kind:id". Clients never parse it; the
// encoding only keeps IDs of different kinds apart.
func encodeID(kind string, id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(kind + ":" + strconv.FormatInt(id, 10)))
}

// maxIDLength bounds the opaque IDs worth decoding: the longest kind and row ID encode to less.
const maxIDLength = 64

// parseID splits an opaque ID into its kind and row ID. Each row has exactly one ID: a string
// that decodes to a row but is not the one encodeID makes of it ("Workflow:01", "Workflow:+1",
// other base64 bits) is not an ID, so IDs can be compared as strings.
func parseID(s string) (kind string, id int64, ok bool) {
	if len(s) > maxIDLength {
		return "", 0, false
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return "", 0, false
	}
	kind, num, found := strings.Cut(string(b), ":")
	if !found {
		return "", 0, false
	}
	id, err = strconv.ParseInt(num, 10, 64)
	if err != nil || id <= 0 || encodeID(kind, id) != s {
		return "", 0, false
	}
	return kind, id, true
}

// decodeID returns the row ID of an opaque ID of a kind, or an INVALID_INPUT error naming field.
func decodeID(field, kind, s string) (int64, error) {
	k, id, ok := parseID(s)
	if !ok || k != kind {
		return 0, &workflow.Error{Code: workflow.CodeInvalidInput, Field: field, Message: "not " + article(kind) + " " + kind + " ID: " + quoteInput(s)}
	}
	return id, nil
}

// decodeIDs decodes a list of opaque IDs of one kind; an error names the field with the index at
// fault ("filter.ids[2]").
func decodeIDs(field, kind string, ss []string) ([]int64, error) {
	out := make([]int64, 0, len(ss))
	for i, s := range ss {
		id, err := decodeID(indexedField(field, i), kind, s)
		if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, nil
}

// invalidInput is an INVALID_INPUT error about an input field.
func invalidInput(field, message string) error {
	return &workflow.Error{Code: workflow.CodeInvalidInput, Field: field, Message: message}
}

// quoteInput quotes a client's value for an error message, cut short when long.
func quoteInput(s string) string {
	const max = 64
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}

// indexedField names an item of a list argument or input field, as "ids[2]".
func indexedField(field string, i int) string { return field + "[" + strconv.Itoa(i) + "]" }

// article is the indefinite article of a kind's name ("an Action", "a Workflow").
func article(kind string) string {
	if kind != "" && strings.ContainsRune("AEIOU", rune(kind[0])) {
		return "an"
	}
	return "a"
}
