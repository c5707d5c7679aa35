package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// deployedSpec is the stored spec of a deployed definition: the compiled states (for clients that
// draw them) and the source every node compiles again.
type deployedSpec struct {
	workflow.Definition
	Source string `json:"source"`
	Label  string `json:"label,omitempty"`
}

// deployedTypeTTL is how long a node trusts its list of deployed types before reading it again: a
// definition deployed on another node becomes claimable here within it.
const deployedTypeTTL = 2 * time.Second

// deployState is what an Engine knows about deployed definitions.
type deployState struct {
	mu       sync.Mutex
	compiler workflow.DocumentCompiler
	groups   map[string]string // deployed type -> executor group
	read     time.Time
}

// SetCompiler installs the compiler of deployed documents: from then on this node deploys them
// and runs the deployed definitions stored by any node.
func (e *Engine) SetCompiler(c workflow.DocumentCompiler) {
	e.deploy.mu.Lock()
	defer e.deploy.mu.Unlock()
	e.deploy.compiler = c
}

func (e *Engine) compiler() workflow.DocumentCompiler {
	e.deploy.mu.Lock()
	defer e.deploy.mu.Unlock()
	return e.deploy.compiler
}

// Deploy compiles a document and stores it as a new version of its type, unless an unchanged
// version is stored already. Workflows already running keep the version they started with. A new
// version is recorded in the audit log, as actor's act, in the transaction that stores it.
func (e *Engine) Deploy(ctx context.Context, source, actor string) (workflow.DeployResult, error) {
	c := e.compiler()
	if c == nil {
		return workflow.DeployResult{}, invalid("source", "this node has no compiler of deployed definitions")
	}
	if len(bytes.TrimSpace([]byte(source))) == 0 {
		return workflow.DeployResult{}, invalid("source", "the document is empty")
	}
	if len(source) > workflow.MaxDocumentBytes {
		return workflow.DeployResult{}, invalid("source", "the document has %d bytes; at most %d are accepted", len(source), workflow.MaxDocumentBytes)
	}
	if err := workflow.CheckString("source", source, workflow.MaxDocumentBytes); err != nil {
		return workflow.DeployResult{}, err
	}
	doc, err := c.Compile([]byte(source))
	if err != nil {
		return workflow.DeployResult{}, err
	}
	def := doc.Definition.WithDefaults()
	if err := def.Validate(); err != nil {
		return workflow.DeployResult{}, err
	}
	if _, ok := e.Definition(def.Type); ok {
		return workflow.DeployResult{}, conflict("type %q is defined in code on this node and cannot be deployed", def.Type)
	}
	newest, err := e.store.DefinitionGet(ctx, persistence.DefinitionGetParams{Type: def.Type})
	switch {
	case err == nil && sourceOf(newest.Spec) == "":
		return workflow.DeployResult{}, conflict("type %q is defined in code and cannot be deployed", def.Type)
	case err != nil && !errors.Is(err, persistence.ErrNotFound):
		return workflow.DeployResult{}, err
	}
	spec, err := json.Marshal(deployedSpec{Definition: def, Source: source, Label: doc.Label})
	if err != nil {
		return workflow.DeployResult{}, fmt.Errorf("error encoding deployed definition %s: %w", def.Type, err)
	}
	sum := sha256.Sum256(doc.Canonical)
	var row *persistence.Definition
	var created bool
	err = e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		var err error
		row, created, err = tx.DefinitionSave(ctx, persistence.DefinitionSaveParams{
			Type: def.Type, Checksum: "sw:" + hex.EncodeToString(sum[:]), Description: def.Description, Spec: spec, ExecutorGroup: def.ExecutorGroup})
		if err != nil || !created {
			return err
		}
		if err := e.syncDocumentSchedule(ctx, tx, row.Type, doc.Schedule, actor); err != nil {
			return err
		}
		return audit(ctx, tx, actor, "deployDefinition", row.Type, "", map[string]any{"version": row.Version, "checksum": row.Checksum})
	})
	if err != nil {
		return workflow.DeployResult{}, err
	}
	if created {
		e.specs.Store(persistence.DefinitionKey{Type: row.Type, Version: row.Version}, &def)
		e.definitionChanged(row.Type)
	}
	e.noteDeployed(row.Type, row.ExecutorGroup)
	if created {
		e.notifier.Notify(persistence.TopicWake, row.ExecutorGroup)
	}
	return workflow.DeployResult{Definition: row, Created: created}, nil
}

// DeployedSource returns the source of a deployed definition's spec ("" for one defined in code).
func DeployedSource(spec json.RawMessage) string { return sourceOf(spec) }

// DeployedLabel returns the document's own version of a deployed definition's spec ("" for one
// defined in code).
func DeployedLabel(spec json.RawMessage) string {
	if sourceOf(spec) == "" {
		return ""
	}
	var probe struct {
		Label string `json:"label"`
	}
	_ = json.Unmarshal(spec, &probe)
	return probe.Label
}

// DeployedVersion returns the newest deployed version of typ whose document version
// (document.version) is label: a parent that pins a child's version keeps running it after newer
// ones are deployed. ErrNotFound (persistence) when no version has that label.
func (e *Engine) DeployedVersion(ctx context.Context, typ, label string) (*persistence.Definition, error) {
	// Most pins name the newest version: one row. Otherwise every version, newest first, since
	// the label lives in the spec.
	newest, err := e.store.DefinitionGet(ctx, persistence.DefinitionGetParams{Type: typ})
	if err != nil {
		return nil, err
	}
	if DeployedLabel(newest.Spec) == label {
		return newest, nil
	}
	all, err := e.store.DefinitionList(ctx, persistence.DefinitionListParams{Type: typ, AllVersions: true})
	if err != nil {
		return nil, err
	}
	for _, d := range all {
		if DeployedLabel(d.Spec) == label {
			return d, nil
		}
	}
	return nil, fmt.Errorf("no deployed version of %s is %q: %w", typ, label, persistence.ErrNotFound)
}

func sourceOf(spec json.RawMessage) string {
	if !bytes.Contains(spec, []byte(`"source"`)) {
		return ""
	}
	var probe struct {
		Source string `json:"source"`
	}
	if json.Unmarshal(spec, &probe) != nil {
		return ""
	}
	return probe.Source
}

// parseRow decodes a stored definition version: a deployed one is compiled again (with handlers)
// when this node has a compiler, any other decoded as it is.
func (e *Engine) parseRow(row *persistence.Definition) (*workflow.Definition, error) {
	src := sourceOf(row.Spec)
	c := e.compiler()
	if src == "" || c == nil {
		return workflow.ParseSpec(row.Spec)
	}
	doc, err := c.Compile([]byte(src))
	if err != nil {
		return nil, workflow.NonRetryable(fmt.Errorf("error compiling deployed definition %s v%d: %w", row.Type, row.Version, err))
	}
	def := doc.Definition.WithDefaults()
	e.noteDeployed(row.Type, row.ExecutorGroup)
	return &def, nil
}

func (e *Engine) noteDeployed(typ, group string) {
	e.deploy.mu.Lock()
	defer e.deploy.mu.Unlock()
	if e.deploy.groups == nil {
		e.deploy.groups = map[string]string{}
	}
	e.deploy.groups[typ] = group
}

// deployedTypes returns the deployed types of an executor group, sorted, reading the stored
// definitions again when the list is older than deployedTypeTTL (so a type deployed on another
// node becomes claimable here). A node without a compiler runs none.
func (e *Engine) deployedTypes(group string) []string {
	e.deploy.mu.Lock()
	defer e.deploy.mu.Unlock()
	if e.deploy.compiler == nil {
		return nil
	}
	if time.Since(e.deploy.read) > deployedTypeTTL {
		e.deploy.read = time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defs, err := e.store.DefinitionList(ctx, persistence.DefinitionListParams{})
		cancel()
		if err != nil {
			e.log.Warn("error reading deployed definitions", "error", err)
		}
		for _, d := range defs {
			if sourceOf(d.Spec) != "" {
				if e.deploy.groups == nil {
					e.deploy.groups = map[string]string{}
				}
				e.deploy.groups[d.Type] = d.ExecutorGroup
			}
		}
	}
	var out []string
	for typ, g := range e.deploy.groups {
		if g == group {
			out = append(out, typ)
		}
	}
	sort.Strings(out)
	return out
}
