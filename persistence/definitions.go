package persistence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// DefinitionSaveParams is the input of DefinitionSave.
type DefinitionSaveParams struct {
	Type          string
	Checksum      string
	Description   string
	Spec          json.RawMessage
	ExecutorGroup string
}

// DefinitionSave stores a definition's content as a new version, unless a version with the same
// checksum exists, which it returns instead (created false). Several nodes may save the same
// definition at once: one inserts, the others find it.
func (s *Store) DefinitionSave(ctx context.Context, p DefinitionSaveParams) (def *Definition, created bool, err error) {
	// Each round of a race between savers of one type stores one version, so a saver tries for as
	// long as the versions it reads go up; it gives up only after rounds in which none did.
	lastMax, stalled := -1, 0
	for stalled < 5 {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		existing := new(Definition)
		err := s.idb.NewSelect().Model(existing).Where("type = ? AND checksum = ?", p.Type, p.Checksum).Scan(ctx)
		if err == nil {
			return existing, false, nil
		}
		if err := noRows(err, "definition", p.Type); !errors.Is(err, ErrNotFound) {
			return nil, false, err
		}
		var maxVersion int
		if err := s.idb.NewSelect().Model((*Definition)(nil)).ColumnExpr("COALESCE(MAX(version), 0)").
			Where("type = ?", p.Type).Scan(ctx, &maxVersion); err != nil {
			return nil, false, fmt.Errorf("error reading the versions of definition %s: %w", p.Type, err)
		}
		if maxVersion > lastMax {
			lastMax, stalled = maxVersion, 0
		}
		stalled++
		now := Now()
		def = &Definition{
			Type: p.Type, Version: maxVersion + 1, Checksum: p.Checksum, Description: p.Description,
			Spec: p.Spec, ExecutorGroup: p.ExecutorGroup, ReleaseState: ReleaseOnline, Created: now, Modified: now,
		}
		// A transaction of its own (or the caller's), so that Tx runs the insert again when the
		// database rolls it back to break a deadlock: concurrent inserts of one type meet on its
		// two unique keys, and InnoDB may pick one of them.
		var n int64
		err = s.Tx(ctx, func(ctx context.Context, tx *Store) error {
			var err error
			n, err = tx.dialect.insertSkippingDuplicates(ctx, tx, def, "", true)
			return err
		})
		if err != nil {
			return nil, false, fmt.Errorf("error saving definition %s: %w", p.Type, err)
		}
		if n == 1 {
			return def, true, nil
		}
		// Another node saved a version between our read and insert: read again.
	}
	return nil, false, fmt.Errorf("error saving definition %s: its versions stopped moving while its inserts kept losing: %w", p.Type, ErrConflict)
}

// DefinitionGetParams is the input of DefinitionGet.
type DefinitionGetParams struct {
	Type string
	// Version 0 means the newest.
	Version int
}

// DefinitionGet returns one version of a definition (the newest when Version is 0).
func (s *Store) DefinitionGet(ctx context.Context, p DefinitionGetParams) (*Definition, error) {
	def := new(Definition)
	q := s.idb.NewSelect().Model(def).Where("type = ?", p.Type)
	if p.Version > 0 {
		q = q.Where("version = ?", p.Version)
	} else {
		q = q.Order("version DESC").Limit(1)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, noRows(err, "definition", fmt.Sprintf("%s v%d", p.Type, p.Version))
	}
	return def, nil
}

// DefinitionListParams is the input of DefinitionList.
type DefinitionListParams struct {
	// Type limits the list to one type ("" for all).
	Type string
	// AllVersions lists every version; otherwise only the newest of each type.
	AllVersions bool
}

// DefinitionList lists definitions ordered by type, newest version first.
func (s *Store) DefinitionList(ctx context.Context, p DefinitionListParams) ([]*Definition, error) {
	var defs []*Definition
	q := s.idb.NewSelect().Model(&defs).OrderExpr("type, version DESC")
	if p.Type != "" {
		q = q.Where("type = ?", p.Type)
	}
	if !p.AllVersions {
		q = q.Where("version = (SELECT MAX(d2.version) FROM workflow_definitions AS d2 WHERE d2.type = d.type)")
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("error listing definitions: %w", err)
	}
	return defs, nil
}

// DefinitionKey names one version of a definition.
type DefinitionKey struct {
	Type    string
	Version int
}

// DefinitionGetMany returns the definitions with the given keys (missing ones are left out).
func (s *Store) DefinitionGetMany(ctx context.Context, keys []DefinitionKey) ([]*Definition, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	types := make([]string, 0, len(keys))
	seen := map[string]bool{}
	for _, k := range keys {
		if !seen[k.Type] {
			seen[k.Type] = true
			types = append(types, k.Type)
		}
	}
	var defs []*Definition
	if err := s.idb.NewSelect().Model(&defs).Where("type IN (?)", bunIn(types)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("error loading definitions: %w", err)
	}
	want := map[DefinitionKey]bool{}
	for _, k := range keys {
		want[k] = true
	}
	out := defs[:0]
	for _, d := range defs {
		if want[DefinitionKey{d.Type, d.Version}] {
			out = append(out, d)
		}
	}
	return out, nil
}

// DefinitionSetReleaseStateParams is the input of DefinitionSetReleaseState.
type DefinitionSetReleaseStateParams struct {
	Type  string
	State ReleaseState
}

// DefinitionSetReleaseState sets the release state of every version of a type.
func (s *Store) DefinitionSetReleaseState(ctx context.Context, p DefinitionSetReleaseStateParams) error {
	res, err := s.idb.NewUpdate().Model((*Definition)(nil)).
		Set("release_state = ?", p.State).Set("modified = ?", Now()).
		Where("type = ?", p.Type).Exec(ctx)
	if err != nil {
		return fmt.Errorf("error setting the release state of %s: %w", p.Type, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("definition", p.Type)
	}
	return nil
}

// DefinitionGetByIDs returns the definition versions with the given row IDs, in ID order.
func (s *Store) DefinitionGetByIDs(ctx context.Context, ids []int64) ([]*Definition, error) {
	return getByIDs[Definition](ctx, s, ids, "definitions")
}
