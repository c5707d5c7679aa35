package engine

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// TokenParams is the input of CreateToken.
type TokenParams struct {
	Name string
	// Role is the token's role, checked by the caller (the API's enum, the CLI's flag).
	Role string
	// Functions are the remote functions a worker token serves (required for worker, none otherwise).
	Functions []string
	// ExpiresAt is when the token stops being accepted (nil: never); it must be in the future.
	ExpiresAt *time.Time
	// Worker is true for the worker role, whose tokens need Functions.
	Worker bool
	// Actor is who makes the token, for the audit log.
	Actor string
}

// CreateToken makes an API token and returns it with its secret, which is not stored (only its
// hash is) and cannot be shown again. A name taken (by a live or a revoked token) is a CONFLICT;
// an empty name, an expiry in the past or functions that do not go with the role, INVALID_INPUT.
// The audit entry commits with the token.
func (e *Engine) CreateToken(ctx context.Context, p TokenParams) (*persistence.APIToken, string, error) {
	p.Name = strings.TrimSpace(p.Name)
	if p.Name == "" {
		return nil, "", invalid("name", "must not be empty")
	}
	if err := workflow.CheckString("name", p.Name, workflow.MaxKeyLength); err != nil {
		return nil, "", err
	}
	if p.ExpiresAt != nil {
		if err := workflow.CheckTime("expiresAt", *p.ExpiresAt); err != nil {
			return nil, "", err
		}
		if !p.ExpiresAt.After(persistence.Now()) {
			return nil, "", invalid("expiresAt", "must be in the future")
		}
	}
	var fns []string
	for i, f := range p.Functions {
		if f = strings.TrimSpace(f); f == "" || strings.Contains(f, ",") {
			return nil, "", invalid("functions", "function %d must be a name without commas", i)
		}
		fns = append(fns, f)
	}
	switch {
	case p.Worker && len(fns) == 0:
		return nil, "", invalid("functions", "a WORKER token needs the functions it serves")
	case !p.Worker && len(fns) > 0:
		return nil, "", invalid("functions", "only a WORKER token serves functions")
	}
	secret, err := persistence.NewTokenSecret()
	if err != nil {
		return nil, "", err
	}
	row := &persistence.APIToken{Name: p.Name, Hash: persistence.HashToken(secret), Role: p.Role, ExpiresAt: persistence.UTCPtr(p.ExpiresAt)}
	if len(fns) > 0 {
		joined := strings.Join(fns, ",")
		row.Functions = &joined
	}
	err = e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		if err := tx.APITokenInsert(ctx, row); errors.Is(err, persistence.ErrConflict) {
			return conflictOn("name", "a token named %q exists (or was revoked: names are not reused)", p.Name)
		} else if err != nil {
			return err
		}
		return audit(ctx, tx, p.Actor, "createToken", p.Name, "", map[string]any{"role": p.Role, "expiresAt": row.ExpiresAt})
	})
	if err != nil {
		return nil, "", err
	}
	return row, secret, nil
}

// RevokeToken revokes the live token of a name (NOT_FOUND when there is none); the audit entry
// commits with the revocation.
func (e *Engine) RevokeToken(ctx context.Context, name, actor string) error {
	return e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		if err := tx.APITokenRevoke(ctx, name); errors.Is(err, persistence.ErrNotFound) {
			return notFound("name", "no live token named %q", name)
		} else if err != nil {
			return err
		}
		return audit(ctx, tx, actor, "revokeToken", name, "", nil)
	})
}

// Tokens returns the API tokens not revoked, by name.
func (e *Engine) Tokens(ctx context.Context) ([]*persistence.APIToken, error) {
	return e.store.APITokenList(ctx)
}
