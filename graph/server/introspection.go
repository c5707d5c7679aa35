package server

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// introspectionGuard refuses __schema and __type with a FORBIDDEN code when introspection is off
// (gqlgen's own refusal is an uncoded error). Use it after extension.Introspection.
type introspectionGuard struct{}

var (
	_ graphql.HandlerExtension        = introspectionGuard{}
	_ graphql.OperationContextMutator = introspectionGuard{}
)

// ExtensionName names the extension for gqlgen.
func (introspectionGuard) ExtensionName() string { return "IntrospectionGuard" }

// Validate checks the extension's configuration.
func (introspectionGuard) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationContext refuses an introspection query when introspection is off.
func (introspectionGuard) MutateOperationContext(_ context.Context, op *graphql.OperationContext) *gqlerror.Error {
	if op.Operation == nil || !op.DisableIntrospection || !introspects(op.Operation.SelectionSet, map[string]bool{}) {
		return nil
	}
	err := gqlerror.Errorf("introspection is disabled on this server")
	err.Extensions = map[string]any{"code": "FORBIDDEN"}
	return err
}

// introspects reports whether a selection set asks for __schema or __type anywhere.
func introspects(set ast.SelectionSet, visiting map[string]bool) bool {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			if s.Name == "__schema" || s.Name == "__type" || introspects(s.SelectionSet, visiting) {
				return true
			}
		case *ast.InlineFragment:
			if introspects(s.SelectionSet, visiting) {
				return true
			}
		case *ast.FragmentSpread:
			if s.Definition != nil && !visiting[s.Name] {
				visiting[s.Name] = true
				if introspects(s.Definition.SelectionSet, visiting) {
					return true
				}
			}
		}
	}
	return false
}
