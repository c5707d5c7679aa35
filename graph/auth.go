package graph

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cairnflow/cairn/persistence"
)

// Roles of API tokens: an admin may do everything, a reader may query and subscribe but not mutate.
const (
	RoleAdmin  = "admin"
	RoleReader = "reader"
)

// Error codes of authentication and authorization.
const (
	codeUnauthenticated = "UNAUTHENTICATED"
	codeForbidden       = "FORBIDDEN"
)

// Authenticator checks a bearer token and returns the caller's role; an error means the token is
// unknown or revoked.
type Authenticator func(ctx context.Context, token string) (role string, err error)

// StoreAuthenticator checks tokens against the API tokens in a Store (by their hash).
func StoreAuthenticator(store *persistence.Store) Authenticator {
	return func(ctx context.Context, token string) (string, error) {
		t, err := store.APITokenGetByHash(ctx, persistence.HashToken(token))
		if err != nil {
			return "", err
		}
		return t.Role, nil
	}
}

type roleKey struct{}

func withRole(ctx context.Context, role string) context.Context {
	return context.WithValue(ctx, roleKey{}, role)
}

// roleOf returns the caller's role ("" when the server does not authenticate).
func roleOf(ctx context.Context) string {
	role, _ := ctx.Value(roleKey{}).(string)
	return role
}

var errUnauthenticated = errors.New("a valid API token is required: send Authorization: Bearer <token>")

// bearer extracts the token of an Authorization header value.
func bearer(header string) string {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// authenticate checks a token and returns the context with the caller's role.
func (a Authenticator) authenticate(ctx context.Context, header string) (context.Context, error) {
	token := bearer(header)
	if token == "" {
		return ctx, errUnauthenticated
	}
	role, err := a(ctx, token)
	if err != nil {
		return ctx, errUnauthenticated
	}
	return withRole(ctx, role), nil
}

// requireToken refuses HTTP requests without a valid token with 401 and an UNAUTHENTICATED error.
// A websocket upgrade without the header passes: browsers cannot set it, so the token comes in the
// connection_init payload instead (see wsInit).
func requireToken(auth Authenticator, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header := r.Header.Get("Authorization")
		if header == "" && strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			next.ServeHTTP(w, r)
			return
		}
		ctx, err := auth.authenticate(r.Context(), header)
		if err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("WWW-Authenticate", `Bearer realm="cairn"`)
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]any{{
				"message": err.Error(), "extensions": map[string]any{"code": codeUnauthenticated}}}})
			return
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// wsInit authenticates a websocket from its connection_init payload ({"Authorization": "Bearer
// ..."}) unless the upgrade request already carried the header.
func wsInit(auth Authenticator) transport.WebsocketInitFunc {
	return func(ctx context.Context, payload transport.InitPayload) (context.Context, *transport.InitPayload, error) {
		if roleOf(ctx) != "" {
			return ctx, nil, nil
		}
		ctx, err := auth.authenticate(ctx, payload.Authorization())
		return ctx, nil, err
	}
}

// readersCannotMutate refuses mutations to callers whose role is not admin, with FORBIDDEN.
type readersCannotMutate struct{}

var (
	_ graphql.HandlerExtension        = readersCannotMutate{}
	_ graphql.OperationContextMutator = readersCannotMutate{}
)

func (readersCannotMutate) ExtensionName() string { return "ReadersCannotMutate" }

func (readersCannotMutate) Validate(graphql.ExecutableSchema) error { return nil }

func (readersCannotMutate) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	if oc.Operation != nil && oc.Operation.Operation == ast.Mutation && roleOf(ctx) != RoleAdmin {
		return &gqlerror.Error{Message: "this API token may read but not change anything (role " + roleOf(ctx) + ")",
			Extensions: map[string]any{"code": codeForbidden}}
	}
	return nil
}
