package persistence

import (
	"context"
	"errors"
	"fmt"

	"github.com/uptrace/bun/migrate"
)

// ErrSchemaTooNew is returned when the database holds migrations this cairn does not know: a newer
// cairn migrated it, and this one must not run against it.
var ErrSchemaTooNew = errors.New("database schema is newer than this cairn")

// ErrNotMigrated is returned by CheckSchema when migrations are pending.
var ErrNotMigrated = errors.New("database is not migrated")

// MigrationStatus is one migration and whether it is applied.
type MigrationStatus struct {
	Name    string
	Applied bool
}

// migrations discovers the embedded migrations of the Store's dialect.
func (s *Store) migrations() (*migrate.Migrations, error) {
	ms := migrate.NewMigrations()
	if err := ms.Discover(s.dialect.migrations()); err != nil {
		return nil, fmt.Errorf("error reading migrations: %w", err)
	}
	return ms, nil
}

func (s *Store) migrator() (*migrate.Migrator, error) {
	ms, err := s.migrations()
	if err != nil {
		return nil, err
	}
	return migrate.NewMigrator(s.db, ms,
		migrate.WithTableName("cairn_migrations"),
		migrate.WithLocksTableName("cairn_migration_locks"),
		migrate.WithMarkAppliedOnSuccess(true)), nil
}

// withMigrationLock runs fn while holding the dialect's migration lock, so that nodes migrating
// one database at once take turns.
func (s *Store) withMigrationLock(ctx context.Context, fn func() error) error {
	return s.dialect.withMigrationLock(ctx, s.db, fn)
}

// Migrate applies every pending migration (up) and returns the names it applied. Several nodes may
// call it at once against one database: they take turns, and all but the first find nothing to do.
func (s *Store) Migrate(ctx context.Context) ([]string, error) {
	return s.runMigrations(ctx, "migrating", (*migrate.Migrator).Migrate)
}

// Rollback undoes the last group of migrations applied together and returns their names.
func (s *Store) Rollback(ctx context.Context) ([]string, error) {
	return s.runMigrations(ctx, "rolling back", (*migrate.Migrator).Rollback)
}

// runMigrations runs one direction of the migrator under the migration lock, refusing a database
// a newer cairn migrated, and returns the names of the migrations it ran.
func (s *Store) runMigrations(ctx context.Context, doing string,
	run func(*migrate.Migrator, context.Context, ...migrate.MigrationOption) (*migrate.MigrationGroup, error)) ([]string, error) {
	m, err := s.migrator()
	if err != nil {
		return nil, err
	}
	var names []string
	err = s.withMigrationLock(ctx, func() error {
		if err := m.Init(ctx); err != nil {
			return fmt.Errorf("error creating the migrations table: %w", err)
		}
		if err := s.checkNotNewer(ctx); err != nil {
			return err
		}
		group, err := run(m, ctx)
		if err != nil {
			return fmt.Errorf("error %s: %w", doing, err)
		}
		for _, mig := range group.Migrations {
			names = append(names, mig.Name)
		}
		return nil
	})
	return names, err
}

// MigrationStatuses lists every migration this cairn knows and whether it is applied.
func (s *Store) MigrationStatuses(ctx context.Context) ([]MigrationStatus, error) {
	m, err := s.migrator()
	if err != nil {
		return nil, err
	}
	if err := s.checkNotNewer(ctx); err != nil {
		return nil, err
	}
	ms, err := s.knownMigrations(ctx, m)
	if err != nil {
		return nil, err
	}
	out := make([]MigrationStatus, 0, len(ms))
	for _, mig := range ms {
		out = append(out, MigrationStatus{Name: mig.Name, Applied: mig.IsApplied()})
	}
	return out, nil
}

// CheckSchema returns nil when every migration is applied, ErrNotMigrated when some are pending
// and ErrSchemaTooNew when the database is ahead of this cairn. /readyz uses it.
func (s *Store) CheckSchema(ctx context.Context) error {
	statuses, err := s.MigrationStatuses(ctx)
	if err != nil {
		return err
	}
	for _, st := range statuses {
		if !st.Applied {
			return fmt.Errorf("%w: %s is pending", ErrNotMigrated, st.Name)
		}
	}
	return nil
}

// knownMigrations is MigrationsWithStatus, treating a database with no migrations table as empty.
func (s *Store) knownMigrations(ctx context.Context, m *migrate.Migrator) (migrate.MigrationSlice, error) {
	exists, err := s.tableExists(ctx, "cairn_migrations")
	if err != nil {
		return nil, err
	}
	if !exists {
		return s.migrationsFromFS()
	}
	ms, err := m.MigrationsWithStatus(ctx)
	if err != nil {
		return nil, fmt.Errorf("error reading applied migrations: %w", err)
	}
	return ms, nil
}

// checkNotNewer fails when the migrations table names a migration this binary does not embed.
func (s *Store) checkNotNewer(ctx context.Context) error {
	exists, err := s.tableExists(ctx, "cairn_migrations")
	if err != nil || !exists {
		return err
	}
	var names []string
	if err := s.db.NewSelect().Table("cairn_migrations").Column("name").Scan(ctx, &names); err != nil {
		return fmt.Errorf("error reading applied migrations: %w", err)
	}
	known := map[string]bool{}
	ms, err := s.migrationsFromFS()
	if err != nil {
		return err
	}
	for _, mig := range ms {
		known[mig.Name] = true
	}
	for _, name := range names {
		if !known[name] {
			return fmt.Errorf("%w: it has migration %s, which this cairn does not know; upgrade cairn", ErrSchemaTooNew, name)
		}
	}
	return nil
}

func (s *Store) migrationsFromFS() (migrate.MigrationSlice, error) {
	ms, err := s.migrations()
	if err != nil {
		return nil, err
	}
	return ms.Sorted(), nil
}

func (s *Store) tableExists(ctx context.Context, name string) (bool, error) {
	exists, err := s.dialect.tableExists(ctx, s.db, name)
	if err != nil {
		return false, fmt.Errorf("error checking for table %s: %w", name, err)
	}
	return exists, nil
}
