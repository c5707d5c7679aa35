package persistence

import (
	"context"
	"fmt"
)

// WorkflowAncestors counts the ancestors of a workflow (its parent, the parent's parent, ...),
// walking up at most upTo+1 of them: enough to tell a chain deeper than upTo, and no more rows
// read however deep a chain someone made. One statement on every database.
func (s *Store) WorkflowAncestors(ctx context.Context, id int64, upTo int) (int, error) {
	var n int
	err := s.idb.NewRaw(`WITH RECURSIVE chain(id, parent_id, depth) AS (
			SELECT id, parent_id, 0 FROM workflows WHERE id = ?
			UNION ALL
			SELECT w.id, w.parent_id, c.depth + 1 FROM workflows w JOIN chain c ON w.id = c.parent_id WHERE c.depth <= ?
		) SELECT COALESCE(MAX(depth), 0) FROM chain`, id, upTo).Scan(ctx, &n)
	if err != nil {
		return 0, fmt.Errorf("error counting the ancestors of workflow %d: %w", id, err)
	}
	return n, nil
}

// WorkflowTreeCount counts the descendants of a top-level workflow (the workflows whose root it
// is), up to upTo of them, read through the root index.
func (s *Store) WorkflowTreeCount(ctx context.Context, rootID int64, upTo int) (int, error) {
	var n int
	err := s.idb.NewRaw(`SELECT count(*) FROM (SELECT 1 FROM workflows WHERE root_id = ? LIMIT ?) AS c`, rootID, upTo).Scan(ctx, &n)
	if err != nil {
		return 0, fmt.Errorf("error counting the descendants of workflow %d: %w", rootID, err)
	}
	return n, nil
}

// WorkflowChildCount counts the children of a workflow, up to upTo of them (read through the
// parent index, so it costs no more than upTo entries however many there are).
func (s *Store) WorkflowChildCount(ctx context.Context, parentID int64, upTo int) (int, error) {
	var n int
	err := s.idb.NewRaw(`SELECT count(*) FROM (SELECT 1 FROM workflows WHERE parent_id = ? LIMIT ?) AS c`, parentID, upTo).Scan(ctx, &n)
	if err != nil {
		return 0, fmt.Errorf("error counting the children of workflow %d: %w", parentID, err)
	}
	return n, nil
}
