package persistence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// APITokenInsert stores a token (its hash) and sets its ID.
func (s *Store) APITokenInsert(ctx context.Context, t *APIToken) error {
	t.Created = Now()
	if _, err := s.idb.NewInsert().Model(t).Returning("id").Exec(ctx); err != nil {
		return fmt.Errorf("error storing API token %q: %w", t.Name, s.conflictOr(err))
	}
	return nil
}

// APITokenGetByHash returns the live (not revoked) token with a hash.
func (s *Store) APITokenGetByHash(ctx context.Context, hash string) (*APIToken, error) {
	t := new(APIToken)
	if err := s.idb.NewSelect().Model(t).Where("hash = ? AND revoked IS NULL", hash).Scan(ctx); err != nil {
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

// HashToken returns the stored form of an API token: its sha256, in hex. The token itself is
// shown once, when it is made, and never stored.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
