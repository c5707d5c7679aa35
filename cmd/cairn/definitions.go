package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/cairnflow/cairn"
	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/persistence"
)

// runDefinitions deploys Serverless Workflow documents from files: `definitions apply FILE...`.
func runDefinitions(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet("definitions", "cairn definitions apply FILE... [--database URL]\n\n"+
		"  apply  deploy each Serverless Workflow document (YAML or JSON) as a new version of its type\n"+
		"         (<namespace>.<name>), unless it is unchanged; every node runs it")
	var database string
	databaseFlag(fs, &database)
	var run runLimits
	run.registerAllow(fs)
	positional, err := fs.parse(args, env.getenv, env.stdout)
	if err != nil {
		return err
	}
	run.timeout, run.maxOutput = serverless.DefaultRunTimeout, serverless.DefaultRunMaxOutputBytes
	if err := run.check(); err != nil {
		return err
	}
	if len(positional) < 2 || positional[0] != "apply" {
		return usagef("want apply FILE... (see cairn definitions -h)")
	}
	store, err := persistence.Open(ctx, database, persistence.OpenOptions{MaxConns: 2})
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.CheckSchema(ctx); err != nil {
		return err
	}
	// A node that runs nothing: it only deploys.
	node, err := cairn.New(store, cairn.Options{NoWorkers: true, Documents: serverless.NewCompiler(serverless.Options{Run: run.options()})})
	if err != nil {
		return err
	}
	return deployFiles(ctx, node, positional[1:], env.stdout)
}

// deployFiles deploys documents from files in order, printing one line each; it stops at the
// first that is refused, naming the file.
func deployFiles(ctx context.Context, node *cairn.Node, paths []string, out io.Writer) error {
	for _, path := range paths {
		src, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("error reading definition: %w", err)
		}
		res, err := node.Deploy(ctx, string(src))
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		what := "unchanged"
		if res.Created {
			what = "deployed"
			if err := node.Audit(ctx, actorCLI, "deployDefinition", res.Definition.Type, "",
				map[string]any{"version": res.Definition.Version, "checksum": res.Definition.Checksum, "file": filepath.Base(path)}); err != nil {
				return err
			}
		}
		fmt.Fprintf(out, "%s %s version %d (%s)\n", what, res.Definition.Type, res.Definition.Version, path)
	}
	return nil
}

// definitionFiles lists the *.yaml, *.yml and *.json files of a directory, sorted.
func definitionFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("error reading definitions directory: %w", err)
	}
	var out []string
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

// splitList reads a comma-separated flag value, without empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// secretPrefix starts the environment variables whose values are secrets: CAIRN_SECRET_API_KEY
// is $secrets.API_KEY.
const secretPrefix = "CAIRN_SECRET_"

// loadSecrets reads the secrets of deployed definitions: a YAML or JSON object file (none when
// path is empty), then the CAIRN_SECRET_<NAME> variables of environ, which win.
func loadSecrets(path string, environ []string) (map[string]any, error) {
	secrets := map[string]any{}
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("error reading secrets file: %w", err)
		}
		if err := yaml.Unmarshal(b, &secrets); err != nil || secrets == nil {
			return nil, fmt.Errorf("error reading secrets file %s: it must be a YAML or JSON object", path)
		}
	}
	for _, kv := range environ {
		if name, value, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(name, secretPrefix) && len(name) > len(secretPrefix) {
			secrets[strings.TrimPrefix(name, secretPrefix)] = value
		}
	}
	return secrets, nil
}
