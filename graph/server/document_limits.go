package server

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
)

// Error codes of the limits on a query document, checked before validation.
const (
	// codeFieldLimit refuses a document that selects more than Config.MaxFields fields.
	codeFieldLimit = "FIELD_LIMIT_EXCEEDED"
	// codeAliasLimit refuses a document with more than Config.MaxAliases aliases.
	codeAliasLimit = "ALIAS_LIMIT_EXCEEDED"
	// codeValidationFailed is gqlgen's code for a document that does not fit the schema.
	codeValidationFailed = errcode.ValidationFailed
	// codeDepthLimit refuses a query nested deeper than Config.MaxDepth.
	codeDepthLimit = "DEPTH_LIMIT_EXCEEDED"
)

func init() {
	// Refused documents are the client's fault, like a parse error: 422 over HTTP (400 when the
	// client asks for application/graphql-response+json).
	errcode.RegisterErrorType(codeFieldLimit, errcode.KindProtocol)
	errcode.RegisterErrorType(codeAliasLimit, errcode.KindProtocol)
	errcode.RegisterErrorType(codeDepthLimit, errcode.KindProtocol)
}

// documentLimits measures a query document before gqlgen validates it, and refuses one that
// selects too many fields, has too many aliases or nests too deeply. Validation and the cost
// walk are then bounded by those limits: repeated fields (whose pairwise overlap check is
// quadratic) and fragment bombs (fragments that spread each other, exponential when expanded) are
// refused in one linear pass, each fragment measured once.
type documentLimits struct {
	maxFields, maxAliases, maxDepth, tokenLimit int
	// summaries caches the measures of documents already seen, by the sha256 of their text.
	summaries *lru.LRU[*docSummary]
}

var (
	_ graphql.HandlerExtension          = (*documentLimits)(nil)
	_ graphql.OperationParameterMutator = (*documentLimits)(nil)
)

func newDocumentLimits(cfg Config) *documentLimits {
	return &documentLimits{maxFields: cfg.MaxFields, maxAliases: cfg.MaxAliases, maxDepth: cfg.MaxDepth,
		tokenLimit: cfg.ParserTokenLimit, summaries: lru.New[*docSummary](1000)}
}

// ExtensionName names the extension for gqlgen.
func (*documentLimits) ExtensionName() string { return "DocumentLimits" }

// Validate checks the extension's configuration.
func (d *documentLimits) Validate(graphql.ExecutableSchema) error {
	if d.maxFields <= 0 || d.maxAliases <= 0 || d.maxDepth <= 0 {
		return fmt.Errorf("document limits must be positive (fields %d, aliases %d, depth %d)", d.maxFields, d.maxAliases, d.maxDepth)
	}
	return nil
}

// docSummary is what documentLimits measured of a document.
type docSummary struct {
	fields  int // fields as written, in operations and fragments
	aliases int
	// ops holds, per operation name, the fields it selects with every fragment spread expanded
	// (saturating at the limit) and how deeply it nests.
	ops   map[string]opMeasure
	names []string // the operations' names in document order
}

type opMeasure struct{ fields, depth int }

// MutateOperationParameters measures the document of a request; a document that does not parse
// passes on, for gqlgen to report its parse error.
func (d *documentLimits) MutateOperationParameters(ctx context.Context, params *graphql.RawParams) *gqlerror.Error {
	if ctx.Err() != nil {
		return limitError(codeValidationFailed, "the request was cancelled")
	}
	// Keyed by a hash: a document may be large (comments and strings are not tokens), and the
	// cache must not hold a thousand of them.
	sum := sha256.Sum256([]byte(params.Query))
	key := string(sum[:])
	s, ok := d.summaries.Get(ctx, key)
	if !ok {
		doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: params.Query}, d.tokenLimit)
		if err != nil || doc == nil {
			return nil
		}
		s = d.measure(doc)
		d.summaries.Add(ctx, key, s)
	}
	if s.aliases > d.maxAliases {
		return limitError(codeAliasLimit, "the document has %d aliases; at most %d are allowed", s.aliases, d.maxAliases)
	}
	if s.fields > d.maxFields {
		return limitError(codeFieldLimit, "the document selects %d fields; at most %d are allowed", s.fields, d.maxFields)
	}
	if len(s.names) == 0 {
		return nil // gqlgen says "no operation provided"
	}
	name := params.OperationName
	if name == "" {
		if len(s.names) > 1 {
			err := limitError(codeValidationFailed, "the document holds %d operations; operationName must name one", len(s.names))
			err.Extensions["field"] = "operationName"
			return err
		}
		name = s.names[0]
	}
	op, found := s.ops[name]
	if !found {
		err := limitError(codeValidationFailed, "the document holds no operation named %q", params.OperationName)
		err.Extensions["field"] = "operationName"
		return err
	}
	if op.fields > d.maxFields {
		return limitError(codeFieldLimit, "the operation selects %s fields once its fragments are expanded; at most %d are allowed",
			atLeast(op.fields, d.maxFields), d.maxFields)
	}
	if op.depth > d.maxDepth {
		return limitError(codeDepthLimit, "the operation nests %d levels deep; at most %d are allowed", op.depth, d.maxDepth)
	}
	return nil
}

// atLeast formats a saturated count: "more than limit" when counting stopped there.
func atLeast(n, limit int) string {
	if n > limit {
		return fmt.Sprintf("more than %d", limit)
	}
	return fmt.Sprint(n)
}

func limitError(code, format string, args ...any) *gqlerror.Error {
	err := gqlerror.Errorf(format, args...)
	err.Extensions = map[string]any{"code": code}
	return err
}

// measure counts a document's fields and aliases as written, and each operation's expanded fields
// and depth. Each fragment is measured once and remembered, so the pass is linear in the document
// however often fragments spread each other; expanded counts saturate just past maxFields.
func (d *documentLimits) measure(doc *ast.QueryDocument) *docSummary {
	s := &docSummary{ops: map[string]opMeasure{}}
	fragments := map[string]*ast.FragmentDefinition{}
	for _, f := range doc.Fragments {
		fragments[f.Name] = f
		d.countWritten(s, f.SelectionSet)
	}
	m := &measurer{limit: d.maxFields + 1, fragments: fragments, memo: map[string]opMeasure{}, busy: map[string]bool{}}
	for _, op := range doc.Operations {
		d.countWritten(s, op.SelectionSet)
		if _, dup := s.ops[op.Name]; !dup {
			s.names = append(s.names, op.Name)
		}
		s.ops[op.Name] = m.set(op.SelectionSet)
	}
	return s
}

// countWritten adds the fields and aliases of a selection set as written (spreads not followed).
func (d *documentLimits) countWritten(s *docSummary, set ast.SelectionSet) {
	for _, sel := range set {
		switch x := sel.(type) {
		case *ast.Field:
			s.fields++
			if x.Alias != "" && x.Alias != x.Name {
				s.aliases++
			}
			d.countWritten(s, x.SelectionSet)
		case *ast.InlineFragment:
			d.countWritten(s, x.SelectionSet)
		}
	}
}

// measurer measures selection sets with fragment spreads expanded, remembering each fragment.
type measurer struct {
	limit     int
	fragments map[string]*ast.FragmentDefinition
	memo      map[string]opMeasure
	busy      map[string]bool // fragments being measured: a cycle counts nothing (validation refuses it)
}

// set returns the fields a selection set selects and how deeply it nests; introspection fields
// (__schema, __type) count as fields but not as depth, since GraphiQL's introspection query is
// deep by nature and cheap.
func (m *measurer) set(set ast.SelectionSet) opMeasure {
	var out opMeasure
	for _, sel := range set {
		var child opMeasure
		switch x := sel.(type) {
		case *ast.Field:
			child = m.set(x.SelectionSet)
			child.fields++
			if strings.HasPrefix(x.Name, "__") {
				child.depth = 0
			} else {
				child.depth++
			}
		case *ast.InlineFragment:
			child = m.set(x.SelectionSet)
		case *ast.FragmentSpread:
			child = m.fragment(x.Name)
		}
		out.fields = min(out.fields+child.fields, m.limit)
		out.depth = max(out.depth, child.depth)
	}
	return out
}

func (m *measurer) fragment(name string) opMeasure {
	if r, ok := m.memo[name]; ok {
		return r
	}
	f := m.fragments[name]
	if f == nil || m.busy[name] {
		return opMeasure{}
	}
	m.busy[name] = true
	r := m.set(f.SelectionSet)
	delete(m.busy, name)
	m.memo[name] = r
	return r
}
