package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/cairnflow/cairn/persistence"
)

// ReadReplicas picks a read replica for a read-only query, and tells a writer how far the
// primary's WAL is (its consistency token).
type ReadReplicas interface {
	// Pick returns a replica that is up, within the lag bound and has replayed up to after, with
	// its name; ok is false when none is.
	Pick(after persistence.WALPosition) (store *persistence.Store, name string, ok bool)
	// Position returns the primary's WAL position.
	Position(ctx context.Context) (persistence.WALPosition, error)
}

// The sources a ReadRoute names.
const (
	SourcePrimary = "primary"
	SourceReplica = "replica"
)

// ReadRoute carries, for one HTTP request, the consistency token the client sent (After) and what
// the executor decided: the Source that served the reads, and after a mutation the Token the
// client hands back to read its own write.
type ReadRoute struct {
	After  persistence.WALPosition
	Source string
	Token  string
}

type readRouteKey struct{}
type readsKey struct{}

// WithReadRoute attaches a request's route; the executor fills it in.
func WithReadRoute(ctx context.Context, rt *ReadRoute) context.Context {
	return context.WithValue(ctx, readRouteKey{}, rt)
}

// reads returns the store this request reads: a replica's for a routed query, the node's store
// otherwise.
func (r *Resolver) reads(ctx context.Context) Reads {
	if st, ok := ctx.Value(readsKey{}).(Reads); ok {
		return st
	}
	return r.store
}

// routeResponse sends a query of a request that carries a route to a replica when one fits (and
// says which source served it), and after a mutation hands out the primary's WAL position.
func (r *Resolver) routeResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	rt, _ := ctx.Value(readRouteKey{}).(*ReadRoute)
	if r.cfg.Replicas == nil || rt == nil || !graphql.HasOperationContext(ctx) {
		return next(withLoaders(ctx, r.store))
	}
	op := graphql.GetOperationContext(ctx).Operation
	if op == nil || op.Operation == ast.Subscription {
		// A subscription's responses come from its own goroutine: it leaves the route alone.
		return next(withLoaders(ctx, r.store))
	}
	if op.Operation != ast.Query {
		rt.Source = SourcePrimary
		resp := next(withLoaders(ctx, r.store))
		if op.Operation == ast.Mutation {
			if pos, err := r.cfg.Replicas.Position(ctx); err == nil {
				rt.Token = pos.String()
			} else {
				r.log.WarnContext(ctx, "reading the WAL position for the consistency token failed", "error", err)
			}
		}
		return resp
	}
	if st, _, ok := r.cfg.Replicas.Pick(rt.After); ok {
		rt.Source = SourceReplica
		ctx = context.WithValue(ctx, readsKey{}, Reads(st))
		return next(withLoaders(ctx, st))
	}
	rt.Source = SourcePrimary
	return next(withLoaders(ctx, r.store))
}
