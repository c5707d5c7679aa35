package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cairnflow/cairn/graph"
	"github.com/cairnflow/cairn/persistence"
)

// actorCLI is who acts through the command line, in the audit log.
const actorCLI = "cli"

// runToken manages API tokens: `token create` prints a new token once (only its hash is stored),
// `token revoke` refuses it from then on. Nodes started with --auth require one.
func runToken(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet("token", "cairn token create|revoke --name NAME [--role admin|operator|reader|worker] [--functions f1,f2] [--database URL]\n\n"+
		"  create  make a token and print it (shown once; only its hash is stored)\n"+
		"  revoke  refuse the token of that name from now on")
	var database, name, role, functions string
	databaseFlag(fs, &database)
	fs.StringVar(&name, "name", "", "the token's `name` (unique)")
	fs.StringVar(&role, "role", graph.RoleAdmin, "what the token may do: admin (everything), operator (act on workflows and schedules), reader (queries and subscriptions) or worker (serve --functions' remote tasks)")
	fs.StringVar(&functions, "functions", "", "with --role worker: the `functions` whose tasks the token may poll, heartbeat, complete and fail, comma-separated")
	positional, err := fs.parse(args, env.getenv, env.stdout)
	if err != nil {
		return err
	}
	if len(positional) != 1 || (positional[0] != "create" && positional[0] != "revoke") {
		return usagef("want create or revoke (see cairn token -h)")
	}
	if name == "" {
		return usagef("--name is required")
	}
	if !graph.KnownRole(role) {
		return usagef("--role must be admin, operator, reader or worker, not %q", role)
	}
	var fnList []string
	for _, f := range strings.Split(functions, ",") {
		if f = strings.TrimSpace(f); f != "" {
			fnList = append(fnList, f)
		}
	}
	switch {
	case role == graph.RoleWorker && len(fnList) == 0 && positional[0] == "create":
		return usagef("--role worker needs --functions, the functions the token serves")
	case role != graph.RoleWorker && len(fnList) > 0:
		return usagef("--functions goes with --role worker only")
	}
	store, err := persistence.Open(ctx, database, persistence.OpenOptions{MaxConns: 2})
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.CheckSchema(ctx); err != nil {
		if errors.Is(err, persistence.ErrNotMigrated) {
			// Tokens live in a table of the schema: say how to make it rather than only that it is missing.
			return fmt.Errorf("%w (run cairn migrate up with this --database first)", err)
		}
		return err
	}
	if positional[0] == "revoke" {
		if err := store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
			if err := tx.APITokenRevoke(ctx, name); err != nil {
				return err
			}
			return tx.AuditInsert(ctx, &persistence.AuditEntry{Actor: actorCLI, Action: "tokenRevoke", Subject: &name})
		}); err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "revoked %s\n", name)
		return nil
	}
	token, err := persistence.NewTokenSecret()
	if err != nil {
		return err
	}
	row := &persistence.APIToken{Name: name, Hash: persistence.HashToken(token), Role: role}
	if len(fnList) > 0 {
		joined := strings.Join(fnList, ",")
		row.Functions = &joined
	}
	details := fmt.Appendf(nil, `{"role":%q}`, role)
	if err := store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		if err := tx.APITokenInsert(ctx, row); err != nil {
			return err
		}
		return tx.AuditInsert(ctx, &persistence.AuditEntry{Actor: actorCLI, Action: "tokenCreate", Subject: &name, Details: details})
	}); err != nil {
		return err
	}
	fmt.Fprintln(env.stdout, token)
	return nil
}
