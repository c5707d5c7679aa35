package graph

import (
	"context"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// Roles of API tokens: an admin may do everything; an operator may start and act on workflows and
// schedules but not run the admin-only fields; a reader may query and subscribe but not mutate; a
// worker may only serve its functions' remote tasks.
const (
	RoleAdmin    = "admin"
	RoleOperator = "operator"
	RoleReader   = "reader"
	// RoleWorker is the role of API tokens that serve remote functions: they may run the task
	// mutations for their functions' tasks, and nothing else.
	RoleWorker = "worker"
)

// rolePolicy is what a role may do beyond queries and subscriptions.
type rolePolicy struct {
	// mutate: the role may run mutations other than adminOnly's and taskMutations'.
	mutate bool
	// admin: the role may also run the adminOnly fields (and the task mutations).
	admin bool
}

// roles is the one table of what each role may do (RoleWorker's task mutations are checked apart,
// see Authorize). A role not in it may only query and subscribe.
var roles = map[string]rolePolicy{
	RoleAdmin:    {mutate: true, admin: true},
	RoleOperator: {mutate: true},
	RoleReader:   {},
	RoleWorker:   {},
}

// adminOnly are the top-level fields (mutations and queries) only an admin may use: deploying and
// releasing definitions, flow control, the API tokens, and the alert rules (whose webhook URLs
// may carry a secret).
var adminOnly = map[string]bool{
	"deployDefinition": true, "setDefinitionReleaseState": true,
	"setFlowControl": true, "clearFlowControl": true,
	"createToken": true, "revokeToken": true, "tokens": true,
	"createAlertRule": true, "deleteAlertRule": true, "alertRules": true,
}

// KnownRole reports whether role is one of the roles.
func KnownRole(role string) bool {
	_, ok := roles[role]
	return ok
}

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

// Authorize says whether a caller of role may run op, after the roles table: a reader may not
// mutate; an operator may run every mutation but the adminOnly ones and the task mutations; only
// an admin may use the adminOnly fields; a worker may only poll, heartbeat, complete and fail tasks
// and read their workflows' IDs. The HTTP server asks it for authenticated callers only.
func Authorize(role string, op *ast.OperationDefinition) *gqlerror.Error {
	if op == nil {
		return nil
	}
	policy := roles[role]
	if role == RoleWorker {
		if op.Operation == ast.Mutation && onlyFields(op.SelectionSet, taskMutations, 0) && workflowsOnlyByID(op.SelectionSet, 0) {
			return nil
		}
		return forbidden("a worker token may only poll, heartbeat, complete and fail its functions' tasks (and read their workflows' IDs)")
	}
	if op.Operation == ast.Mutation && !policy.mutate {
		return forbidden("this API token may read but not change anything (role " + role + ")")
	}
	if policy.admin {
		return nil
	}
	var refused string
	eachTopField(op.SelectionSet, 0, func(name string) {
		if refused == "" && (adminOnly[name] || (op.Operation == ast.Mutation && taskMutations[name] && name != "__typename")) {
			refused = name
		}
	})
	if refused != "" {
		return forbidden(refused + " needs an ADMIN token (role " + role + ")")
	}
	return nil
}

// forbidden is a FORBIDDEN error.
func forbidden(message string) *gqlerror.Error {
	return &gqlerror.Error{Message: message, Extensions: map[string]any{"code": codeForbidden}}
}

// eachTopField calls fn with the name of each top-level field of a selection set, fragments
// included.
func eachTopField(set ast.SelectionSet, depth int, fn func(string)) {
	if depth > 10 {
		return
	}
	for _, s := range set {
		switch s := s.(type) {
		case *ast.Field:
			fn(s.Name)
		case *ast.InlineFragment:
			eachTopField(s.SelectionSet, depth+1, fn)
		case *ast.FragmentSpread:
			if s.Definition != nil {
				eachTopField(s.Definition.SelectionSet, depth+1, fn)
			}
		}
	}
}
