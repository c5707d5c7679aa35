package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// requestHash fingerprints an operation's request, stored with its idempotency key: the same key
// with another request is refused (CONFLICT) instead of answered with a result that is not its own.
// JSON values in parts are compared by content (canonicalJSON), not by spelling.
func requestHash(parts ...any) string {
	b, err := json.Marshal(parts)
	if err != nil { // parts are strings, numbers, times and decoded JSON: cannot fail
		b = []byte(fmt.Sprint(parts...))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// canonicalJSON decodes a JSON value so that it encodes again with sorted keys and exact numbers:
// two spellings of one value give one fingerprint. Empty and null are both nil.
func canonicalJSON(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return string(raw) // not JSON: the operation refuses it anyway
	}
	return v
}

// timeHash is a time's part of a fingerprint (nil: not given).
func timeHash(t *time.Time) any {
	if t == nil {
		return nil
	}
	return persistence.UTC(*t).Format(time.RFC3339Nano)
}

// hashStart fingerprints a start request.
func hashStart(p workflow.StartParams) string {
	parts := []any{p.Type, p.ExternalID, p.BusinessKey, p.LaunchToken, canonicalJSON(p.Input), p.Priority,
		timeHash(p.StartAt), canonicalJSON(p.Variables)}
	// Fingerprints of starts without attributes, a concurrency key or a debounce are unchanged.
	if len(p.Attributes) > 0 && string(p.Attributes) != "null" {
		parts = append(parts, canonicalJSON(p.Attributes))
	}
	if p.ConcurrencyKey != "" {
		parts = append(parts, "concurrencyKey", p.ConcurrencyKey)
	}
	if p.Debounce != nil {
		parts = append(parts, "debounce", p.Debounce.Key, p.Debounce.Period.String())
	}
	return requestHash(append([]any{"start"}, parts...)...)
}

// keyReused is the CONFLICT of an idempotency key used again with another request.
func keyReused(field string) *workflow.Error {
	return conflictOn(field, "this idempotency key was used with another request; use a new key for a new request")
}

// replay returns the workflow as it is now when an operation on it already ran with this
// idempotency key (nil when it did not, or no key was given): the caller then changes nothing. The
// same key with another request (another hash) is a CONFLICT on idempotencyKey. Call it with the
// workflow's row locked, so that a concurrent request with the same key has either committed (and
// is replayed here) or waits for this one.
func replay(ctx context.Context, tx *persistence.Store, op string, id int64, key, hash string) (*persistence.Workflow, error) {
	if key == "" {
		return nil, nil
	}
	k, err := tx.IdempotencyKeyGet(ctx, op, fmt.Sprintf("%d/%s", id, key))
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	if k.RequestHash != "" && k.RequestHash != hash {
		return nil, keyReused("idempotencyKey")
	}
	return tx.WorkflowGet(ctx, id)
}

// remember records that an operation on a workflow ran with an idempotency key (if one was given).
func remember(ctx context.Context, tx *persistence.Store, op string, id int64, key, hash string) error {
	if key == "" {
		return nil
	}
	return tx.IdempotencyKeyInsert(ctx, &persistence.IdempotencyKey{Operation: op, Key: fmt.Sprintf("%d/%s", id, key), WorkflowID: id, RequestHash: hash})
}

// hashSignal fingerprints a signal's request.
func hashSignal(p workflow.SignalParams) string {
	return requestHash("signal", p.Name, canonicalJSON(p.Payload))
}

// idempotentTx runs fn in a transaction, and once more when it collides (ErrConflict) while a key
// was given: a concurrent request with the same key committed first, and fn, run again, replays it.
func (e *Engine) idempotentTx(ctx context.Context, key string, fn func(ctx context.Context, tx *persistence.Store) error) error {
	err := e.store.Tx(ctx, fn)
	if key != "" && errors.Is(err, persistence.ErrConflict) {
		err = e.store.Tx(ctx, fn)
	}
	return err
}
