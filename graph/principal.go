package graph

import (
	"context"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// Roles of API tokens: an admin may do everything, a reader may query and subscribe but not
// mutate, a worker may only serve its functions' remote tasks.
const (
	RoleAdmin  = "admin"
	RoleReader = "reader"
	// RoleWorker is the role of API tokens that serve remote functions: they may run the task
	// mutations for their functions' tasks, and nothing else.
	RoleWorker = "worker"
)

// codeForbidden refuses what the caller's role may not do.
const codeForbidden = "FORBIDDEN"

// Principal is the caller of a request, resolved from its API token once per request (or once
// per websocket connection) by the HTTP server and carried in the request's context.
type Principal struct {
	// Name is the token's name.
	Name string
	// Role is RoleAdmin, RoleReader or RoleWorker.
	Role string
	// Functions are the remote functions a worker token may serve (empty for other roles).
	Functions []string
}

type principalKey struct{}

// WithPrincipal returns ctx carrying the caller p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalOf returns the caller of ctx; ok is false when the server does not authenticate.
func PrincipalOf(ctx context.Context) (p Principal, ok bool) {
	p, ok = ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// roleOf returns the caller's role ("" when the server does not authenticate).
func roleOf(ctx context.Context) string {
	p, _ := PrincipalOf(ctx)
	return p.Role
}

// taskMutations are the only fields a worker token may ask for.
var taskMutations = map[string]bool{"pollTasks": true, "heartbeatTask": true, "completeTask": true, "completeTasks": true, "failTask": true, "__typename": true}

// Authorize says whether a caller of role may run op: a reader may not mutate, and a worker may
// only poll, heartbeat, complete and fail tasks and read their workflows' IDs; an admin may run
// anything. The HTTP server asks it for authenticated callers only.
func Authorize(role string, op *ast.OperationDefinition) *gqlerror.Error {
	if op == nil {
		return nil
	}
	if op.Operation == ast.Mutation && role != RoleAdmin && role != RoleWorker {
		return &gqlerror.Error{Message: "this API token may read but not change anything (role " + role + ")",
			Extensions: map[string]any{"code": codeForbidden}}
	}
	if role != RoleWorker {
		return nil
	}
	if op.Operation == ast.Mutation && onlyFields(op.SelectionSet, taskMutations, 0) && workflowsOnlyByID(op.SelectionSet, 0) {
		return nil
	}
	return &gqlerror.Error{Message: "a worker token may only poll, heartbeat, complete and fail its functions' tasks (and read their workflows' IDs)",
		Extensions: map[string]any{"code": codeForbidden}}
}
