// The newest version of each type, as starts need it: read at most every newestTTL instead of at
// every start, forgotten at once on a change made on this node and, on PostgreSQL, on a hint from
// the node that made it elsewhere.

package engine

import (
	"context"
	"sync"
	"time"

	"github.com/cairnflow/cairn/persistence"
)

// newestTTL is how long a type's newest version read for a start is used before it is read again:
// a version applied, or a release state set, on another node without LISTEN (MariaDB) applies to
// this node's starts within that time.
const newestTTL = time.Second

// newestState caches the newest stored version of each type started on this node.
type newestState struct {
	mu sync.Mutex
	// gen counts the changes seen: a read begun before one is not kept.
	gen  uint64
	rows map[string]newestRow
}

type newestRow struct {
	row  *persistence.Definition
	read time.Time
}

// newestDefinition returns the newest stored version of typ (persistence.ErrNotFound when there is
// none; an unknown type is never cached, so one applied on another node can start at once).
func (e *Engine) newestDefinition(ctx context.Context, typ string) (*persistence.Definition, error) {
	e.newest.mu.Lock()
	c, ok := e.newest.rows[typ]
	gen := e.newest.gen
	e.newest.mu.Unlock()
	if ok && time.Since(c.read) < newestTTL {
		return c.row, nil
	}
	read := time.Now()
	row, err := e.store.DefinitionGet(ctx, persistence.DefinitionGetParams{Type: typ})
	if err != nil {
		return nil, err
	}
	e.newest.mu.Lock()
	if e.newest.gen == gen {
		if e.newest.rows == nil {
			e.newest.rows = map[string]newestRow{}
		}
		e.newest.rows[typ] = newestRow{row: row, read: read}
	}
	e.newest.mu.Unlock()
	return row, nil
}

// definitionChanged forgets the cached newest version of typ (of every type when typ is "") and
// tells the other nodes to forget theirs.
func (e *Engine) definitionChanged(typ string) {
	e.forgetNewest(typ)
	e.notifier.Notify(persistence.TopicDefinitions, typ)
}

func (e *Engine) forgetNewest(typ string) {
	e.newest.mu.Lock()
	e.newest.gen++
	if typ == "" {
		e.newest.rows = nil
	} else {
		delete(e.newest.rows, typ)
	}
	e.newest.mu.Unlock()
}
