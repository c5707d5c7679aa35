package persistence

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"time"
)

// APITokenInsert stores a token (its hash) and sets its ID.
func (s *Store) APITokenInsert(ctx context.Context, t *APIToken) error {
	t.Created = Now()
	if _, err := s.idb.NewInsert().Model(t).Returning("id").Exec(ctx); err != nil {
		return fmt.Errorf("error storing API token %q: %w", t.Name, s.conflictOr(err))
	}
	return nil
}

// APITokenGetByHash returns the live token with a hash: not revoked and not expired.
func (s *Store) APITokenGetByHash(ctx context.Context, hash string) (*APIToken, error) {
	t := new(APIToken)
	if err := s.idb.NewSelect().Model(t).Where("hash = ? AND revoked IS NULL", hash).
		Where("expires_at IS NULL OR expires_at > ?", Now()).Scan(ctx); err != nil {
		return nil, noRows(err, "API token", "")
	}
	return t, nil
}

// APITokenRevoke revokes a token by name.
func (s *Store) APITokenRevoke(ctx context.Context, name string) error {
	res, err := s.idb.NewUpdate().Model((*APIToken)(nil)).Set("revoked = ?", Now()).Where("name = ? AND revoked IS NULL", name).Exec(ctx)
	if err != nil {
		return fmt.Errorf("error revoking API token %q: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return notFound("API token", name)
	}
	return nil
}

// APITokenList returns the tokens not revoked, by name (their hashes included: callers show
// neither hashes nor secrets).
func (s *Store) APITokenList(ctx context.Context) ([]*APIToken, error) {
	var out []*APIToken
	if err := s.idb.NewSelect().Model(&out).Where("revoked IS NULL").OrderExpr("name").Scan(ctx); err != nil {
		return nil, fmt.Errorf("error listing API tokens: %w", err)
	}
	return out, nil
}

// APITokenTouch records that a token was used at now, unless it was already recorded as used
// since now-every: one conditional update, which writes at most once per every per token.
func (s *Store) APITokenTouch(ctx context.Context, id int64, now time.Time, every time.Duration) error {
	_, err := s.idb.NewUpdate().Model((*APIToken)(nil)).Set("last_used = ?", UTC(now)).
		Where("id = ? AND (last_used IS NULL OR last_used < ?)", id, UTC(now.Add(-every))).Exec(ctx)
	if err != nil {
		return fmt.Errorf("error recording the use of API token %d: %w", id, err)
	}
	return nil
}

// NewTokenSecret makes the secret of a new API token: "cairn_" and 32 random bytes.
func NewTokenSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("error making a token: %w", err)
	}
	return "cairn_" + base64.RawURLEncoding.EncodeToString(b), nil
}

// HashToken returns the stored form of an API token: its sha256, in hex. The token itself is
// shown once, when it is made, and never stored.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
