// Command cairn is the cairn workflow engine's one binary, on SQLite, PostgreSQL or MariaDB/MySQL
// (the --database URL picks the backend). Its subcommands:
//
//   - serve runs a node: it migrates the database (unless --no-migrate), then serves HTTP (the
//     GraphQL API with its subscriptions and the remote task protocol at /graphql, GraphiQL at /,
//     the dashboard at /ui, /metrics, /healthz and /readyz) and runs one worker pool per executor
//     group, and drains both on SIGINT or SIGTERM. --no-api and --no-workers run one half only.
//   - migrate up|down|status applies, undoes or lists the database migrations.
//   - bench measures the engine in this process against a throwaway database (workflows/s, steps/s,
//     latencies) and cleans up after itself unless --keep.
//   - token create|revoke manages the API tokens --auth requires.
//   - definitions apply FILE... deploys Serverless Workflow documents (YAML or JSON) as new versions.
//   - version prints the version of cairn and of Go.
//
// Every flag has an environment twin, CAIRN_ and the flag's name in upper snake case
// (--log-level is CAIRN_LOG_LEVEL), except --database, whose twin is CAIRN_DATABASE_URL. A flag
// given on the command line wins over its twin.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// command is one subcommand of the binary. A new subcommand (bench) is one more entry in commands.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *environment, args []string) error
}

// commands is the table main dispatches on, in the order help lists them.
var commands = []command{
	{name: "serve", summary: "run the GraphQL API and the worker pool", run: runServe},
	{name: "migrate", summary: "apply, undo or list database migrations: migrate up|down|status", run: runMigrate},
	{name: "bench", summary: "measure the engine in this process against a throwaway database: workflows/s, steps/s, latencies", run: runBench},
	{name: "token", summary: "create or revoke API tokens: token create|revoke --name NAME [--role admin|reader|worker]", run: runToken},
	{name: "definitions", summary: "deploy Serverless Workflow documents: definitions apply FILE...", run: runDefinitions},
	{name: "version", summary: "print the version of cairn and of Go", run: runVersion},
}

// environment is what a command reads and writes besides its arguments; tests swap it.
type environment struct {
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
}

// usageError is a mistake in the command line; it exits with status 2 instead of 1.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

func main() {
	env := &environment{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	os.Exit(run(context.Background(), env, os.Args[1:]))
}

// run dispatches to a command and turns its error into one line on stderr and an exit status:
// 0 on success, 1 when the command failed, 2 when the command line was wrong.
func run(ctx context.Context, env *environment, args []string) int {
	if len(args) == 0 {
		printUsage(env.stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		printUsage(env.stdout)
		return 0
	}
	for _, c := range commands {
		if c.name != name {
			continue
		}
		err := c.run(ctx, env, args[1:])
		switch {
		case err == nil:
			return 0
		case errors.Is(err, errHelpShown):
			return 0
		}
		fmt.Fprintf(env.stderr, "cairn %s: %s\n", name, oneLine(err.Error()))
		var ue usageError
		if errors.As(err, &ue) {
			return 2
		}
		return 1
	}
	fmt.Fprintf(env.stderr, "cairn: unknown command %q (commands: %s; see cairn help)\n", name, commandNames())
	return 2
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "cairn is a durable workflow engine with a GraphQL API.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: cairn <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run cairn <command> -h for its flags. Every flag has a CAIRN_* environment twin.")
}

func commandNames() string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

// oneLine folds a multi-line error (a driver's, say) into the single line cairn promises on stderr.
func oneLine(s string) string {
	lines := strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' })
	return strings.Join(lines, "; ")
}
