package persistence

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
)

// Analyze refreshes the planner's statistics of every table (what autovacuum does in the
// background on PostgreSQL), so that what is measured next runs with the plans a settled database
// gets.
func (s *Store) Analyze(ctx context.Context) error {
	if err := s.dialect.analyze(ctx, s); err != nil {
		return fmt.Errorf("error analyzing the database: %w", err)
	}
	return nil
}

// StaleStatisticsRows is how many live rows a table must hold before RefreshStaleStatistics
// looks at its statistics: below it, any plan reads a few pages.
const StaleStatisticsRows = 5000

// statisticsTables are the tables RefreshStaleStatistics looks at: those that grow with the
// workflows.
var statisticsTables = []string{"workflows", "task_instances", "actions", "action_variables", "activity_logs",
	"change_events", "side_effects", "signals", "remote_tasks", "workflow_attributes", "idempotency_keys"}

// RefreshStaleStatistics analyzes, on PostgreSQL, the tables of the store's schema that grow
// with the workflows and whose planner statistics describe a table far smaller than it now is (at
// least StaleStatisticsRows live rows, more than four times the rows the statistics count), and
// returns their names.
//
// The case it is for: a table analyzed while every row in it was deleted (pg_class says 0 rows
// on N pages) and filled again. Until autovacuum analyzes it again (it looks at a database once a
// minute by default), the planner takes it for empty, and with it every index: a lookup of
// workflows by ID (id = ANY(...), in every completion) read the whole of workflows_type_idx,
// which holds the ID as its second column, and a drain of 100,000 workflows fell from about
// 20,000 to 1,300-3,200 a second. Its check looks each table up by name (an index probe of
// pg_class) and reads its live rows from the statistics counters: about 0.2 ms, however many
// schemas the database holds. ANALYZE skips a table that another ANALYZE or a vacuum holds, so
// nodes running it at once do not queue behind one another.
//
// MariaDB and MySQL need none of it (InnoDB recalculates a table's statistics itself once a
// tenth of it changed, and reads ranges of the primary key by index dives), nor does SQLite
// (cairn never analyzes a node's SQLite database, and a lookup by rowid is always taken): it
// returns nothing there.
func (s *Store) RefreshStaleStatistics(ctx context.Context) ([]string, error) {
	if s.Kind() != KindPostgres {
		return nil, nil
	}
	var stale []string
	if err := s.idb.NewRaw(`SELECT n.name FROM unnest(?::text[]) AS n(name)
		WHERE pg_stat_get_live_tuples(to_regclass(n.name)) >= ?
			AND pg_stat_get_live_tuples(to_regclass(n.name)) > 4 * (SELECT c.reltuples FROM pg_class AS c WHERE c.oid = to_regclass(n.name))
		ORDER BY n.name`, pgdialect.Array(statisticsTables), StaleStatisticsRows).Scan(ctx, &stale); err != nil {
		return nil, fmt.Errorf("error reading the tables' statistics: %w", err)
	}
	for _, table := range stale {
		if _, err := s.idb.NewRaw("ANALYZE (SKIP_LOCKED) ?", bun.Ident(table)).Exec(ctx); err != nil {
			return nil, fmt.Errorf("error analyzing %s: %w", table, err)
		}
	}
	return stale, nil
}
