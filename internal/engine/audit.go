package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cairnflow/cairn/persistence"
)

// Audit appends an operator act to the audit log: who (actor), what (action, subject "Kind:row" or
// a name), why (reason) and details (marshalled to JSON; nil for none).
func (e *Engine) Audit(ctx context.Context, actor, action, subject, reason string, details any) error {
	return audit(ctx, e.store, actor, action, subject, reason, details)
}

// audit is Audit on store, which may be a transaction: the entry commits with the act.
func audit(ctx context.Context, store *persistence.Store, actor, action, subject, reason string, details any) error {
	entry := &persistence.AuditEntry{Actor: actorOr(actor), Action: action, Subject: strPtr(subject), Reason: strPtr(reason)}
	if details != nil {
		b, err := json.Marshal(details)
		if err != nil {
			return fmt.Errorf("error encoding an audit entry: %w", err)
		}
		entry.Details = b
	}
	return store.AuditInsert(ctx, entry)
}

// subjectOf names a row in the audit log: "Kind:row".
func subjectOf(kind string, id int64) string { return fmt.Sprintf("%s:%d", kind, id) }
