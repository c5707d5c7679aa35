package main

import (
	"context"
	"fmt"

	"github.com/cairnflow/cairn/persistence"
)

// defaultDatabaseURL is the embedded SQLite file next to where cairn runs.
const defaultDatabaseURL = "sqlite://./cairn.db"

// databaseFlag adds --database (CAIRN_DATABASE_URL) to a command's flags.
func databaseFlag(fs *flagSet, p *string) {
	fs.StringVar(p, "database", defaultDatabaseURL,
		"database `URL`: sqlite:///abs/path.db, sqlite://rel/path.db, sqlite://:memory:, postgres://user:pass@host:5432/db or mysql://user:pass@host:3306/db")
}

// poolerFlag registers --pooler: how a postgres:// URL reaches the database.
func poolerFlag(fs *flagSet, p *string) {
	fs.StringVar(p, "pooler", "", "`mode` of a connection pooler between cairn and PostgreSQL: empty for none (or session mode), transaction for PgBouncer's pool_mode = transaction (no prepared statements, no LISTEN: nodes poll; no session locks: dead nodes are found by their expiry)")
}

// poolerOption turns --pooler into the Store's option.
func poolerOption(mode string) (bool, error) {
	switch mode {
	case "":
		return false, nil
	case "transaction":
		return true, nil
	}
	return false, usagef("--pooler must be empty or transaction, not %q", mode)
}

func runMigrate(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet("migrate", "cairn migrate up|down|status|partition-history [--database URL]\n\n"+
		"  up                 apply every pending migration (safe when several nodes run it at once)\n"+
		"  down               undo the last group of migrations applied together\n"+
		"  status             list every migration and whether it is applied\n"+
		"  partition-history  partition the history tables by time (PostgreSQL, --width day or week); it copies\n"+
		"                     them in one transaction that locks them: steps and history reads wait until it ends")
	var database, pooler, width string
	databaseFlag(fs, &database)
	fs.StringVar(&width, "width", "day", "with partition-history: the `width` of a partition, day or week")
	poolerFlag(fs, &pooler)
	positional, err := fs.parse(args, env.getenv, env.stdout)
	if err != nil {
		return err
	}
	pooled, err := poolerOption(pooler)
	if err != nil {
		return err
	}
	if len(positional) != 1 {
		return usagef("want one of up, down, status (see cairn migrate -h)")
	}
	action := positional[0]
	if action != "up" && action != "down" && action != "status" && action != "partition-history" {
		return usagef("unknown action %q: want up, down, status or partition-history", action)
	}

	store, err := persistence.Open(ctx, database, persistence.OpenOptions{MaxConns: 2, Pooler: pooled})
	if err != nil {
		return err
	}
	defer store.Close()

	switch action {
	case "partition-history":
		return migratePartitions(ctx, store, width, env.stdout)
	case "up":
		applied, err := store.Migrate(ctx)
		if err != nil {
			return err
		}
		if len(applied) == 0 {
			fmt.Fprintf(env.stdout, "%s is up to date\n", store.URL())
		}
		for _, name := range applied {
			fmt.Fprintf(env.stdout, "applied %s\n", name)
		}
	case "down":
		undone, err := store.Rollback(ctx)
		if err != nil {
			return err
		}
		if len(undone) == 0 {
			fmt.Fprintf(env.stdout, "%s has no migration to roll back\n", store.URL())
		}
		for _, name := range undone {
			fmt.Fprintf(env.stdout, "rolled back %s\n", name)
		}
	case "status":
		statuses, err := store.MigrationStatuses(ctx)
		if err != nil {
			return err
		}
		pending := 0
		for _, st := range statuses {
			state := "applied"
			if !st.Applied {
				state = "pending"
				pending++
			}
			fmt.Fprintf(env.stdout, "%-8s %s\n", state, st.Name)
		}
		fmt.Fprintf(env.stdout, "%s: %d migrations, %d pending\n", store.URL(), len(statuses), pending)
	}
	return nil
}
