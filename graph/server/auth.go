package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cairnflow/cairn/graph"
	"github.com/cairnflow/cairn/persistence"
)

// Error codes of authentication and authorization.
const (
	codeUnauthenticated = "UNAUTHENTICATED"
	codeForbidden       = "FORBIDDEN"
)

// Authenticator resolves a bearer token into its caller; an error means the token is unknown or
// revoked. The server calls it once per request (once per websocket connection), and again only
// to check that an open stream's token was not revoked since.
type Authenticator func(ctx context.Context, token string) (graph.Principal, error)

// lastUsedEvery is how often a token's last use is recorded at most: a request writes only when
// the token's recorded use is older.
const lastUsedEvery = time.Minute

// StoreAuthenticator resolves tokens against the API tokens in a Store (by their hash): a revoked
// or expired token is unknown. It records a token's use when the recorded one is older than
// lastUsedEvery (a failure to record it does not refuse the request).
func StoreAuthenticator(store *persistence.Store) Authenticator {
	return func(ctx context.Context, token string) (graph.Principal, error) {
		t, err := store.APITokenGetByHash(ctx, persistence.HashToken(token))
		if err != nil {
			return graph.Principal{}, err
		}
		if now := persistence.Now(); t.LastUsed == nil || now.Sub(*t.LastUsed) >= lastUsedEvery {
			_ = store.APITokenTouch(ctx, t.ID, now, lastUsedEvery)
		}
		p := graph.Principal{Name: t.Name, Role: t.Role}
		if fns := graph.TokenFunctions(t); len(fns) > 0 {
			p.Functions = fns
		}
		return p, nil
	}
}

type tokenKey struct{}

// tokenOf returns the token a request or connection authenticated with ("" without auth).
func tokenOf(ctx context.Context) string {
	token, _ := ctx.Value(tokenKey{}).(string)
	return token
}

// roleOf returns the caller's role ("" when the server does not authenticate).
func roleOf(ctx context.Context) string {
	p, _ := graph.PrincipalOf(ctx)
	return p.Role
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

// authenticate resolves a token and returns the context with its caller (and the token, for the
// rechecks of a long-lived stream).
func (a Authenticator) authenticate(ctx context.Context, header string) (context.Context, error) {
	token := bearer(header)
	if token == "" {
		return ctx, errUnauthenticated
	}
	p, err := a(ctx, token)
	if err != nil {
		return ctx, errUnauthenticated
	}
	return context.WithValue(graph.WithPrincipal(ctx, p), tokenKey{}, token), nil
}

// stillValid reports whether the token a context authenticated with is still known; a context
// without a token (auth off) is always valid. A cancelled context is not an answer: it is valid.
func (a Authenticator) stillValid(ctx context.Context) bool {
	token := tokenOf(ctx)
	if token == "" {
		return true
	}
	_, err := a(ctx, token)
	return err == nil || ctx.Err() != nil
}

// watchToken checks a long-lived connection's token every interval until ctx ends, and calls
// revoked once when the token stops being valid (revoked or deleted).
func (a Authenticator) watchToken(ctx context.Context, interval time.Duration, revoked func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if !a.stillValid(ctx) {
				revoked()
				return
			}
		}
	}
}

// requireToken refuses HTTP requests without a valid token with 401 and an UNAUTHENTICATED error.
// A websocket upgrade without the header passes: browsers cannot set it, so the token comes in the
// connection_init payload instead (see wsInit). An SSE stream ends when its token is revoked,
// within recheck.
func requireToken(auth Authenticator, recheck time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header := r.Header.Get("Authorization")
		if header == "" && strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			next.ServeHTTP(w, r)
			return
		}
		ctx, err := auth.authenticate(r.Context(), header)
		if err != nil {
			writeUnauthenticated(w, err)
			return
		}
		if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer cancel()
			go auth.watchToken(ctx, recheck, cancel)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// RequireToken guards a plain HTTP endpoint (such as /metrics) with the API's tokens: a request
// without a valid bearer token gets 401 and an UNAUTHENTICATED error; a worker token, 403.
func RequireToken(auth Authenticator, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, err := auth.authenticate(r.Context(), r.Header.Get("Authorization"))
		if err != nil {
			writeUnauthenticated(w, err)
			return
		}
		if roleOf(ctx) == graph.RoleWorker {
			writeError(w, http.StatusForbidden, codeForbidden, "a worker token may only serve its functions' tasks")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// writeUnauthenticated answers 401 with an UNAUTHENTICATED error.
func writeUnauthenticated(w http.ResponseWriter, err error) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="cairn"`)
	writeError(w, http.StatusUnauthorized, codeUnauthenticated, err.Error())
}

// wsInit authenticates a websocket from its connection_init payload ({"Authorization": "Bearer
// ..."}) unless the upgrade request already carried the header; a bad token closes it with 4403.
// It then checks the token every recheck, and closes the connection with 4403 once it is revoked.
func wsInit(auth Authenticator, recheck time.Duration) transport.WebsocketInitFunc {
	return func(ctx context.Context, payload transport.InitPayload) (context.Context, *transport.InitPayload, error) {
		if _, ok := graph.PrincipalOf(ctx); !ok {
			var err error
			if ctx, err = auth.authenticate(ctx, payload.Authorization()); err != nil {
				return transport.WithWebsocketCloseCode(transport.AppendCloseReason(ctx, "Forbidden"), closeForbidden), nil, err
			}
		}
		if st := wsStateOf(ctx); st != nil {
			go auth.watchToken(ctx, recheck, func() { st.closeWith(closeForbidden, "Forbidden: the API token was revoked or expired") })
		}
		return ctx, nil, nil
	}
}

// tokenStillValid checks the token of a websocket connection again on each of its operations: a
// revoked token closes the connection with 4403 at once, without waiting for the periodic check.
type tokenStillValid struct{ auth Authenticator }

var (
	_ graphql.HandlerExtension        = tokenStillValid{}
	_ graphql.OperationContextMutator = tokenStillValid{}
)

// ExtensionName names the extension for gqlgen.
func (tokenStillValid) ExtensionName() string { return "TokenStillValid" }

// Validate checks the extension's configuration.
func (tokenStillValid) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationContext refuses an operation on a websocket whose token was revoked.
func (v tokenStillValid) MutateOperationContext(ctx context.Context, _ *graphql.OperationContext) *gqlerror.Error {
	st := wsStateOf(ctx)
	if st == nil || v.auth.stillValid(ctx) {
		return nil
	}
	st.closeWith(closeForbidden, "Forbidden: the API token was revoked or expired")
	return &gqlerror.Error{Message: errUnauthenticated.Error(), Extensions: map[string]any{"code": codeUnauthenticated}}
}

// rolesRule refuses what the caller's role may not do (graph.Authorize), with FORBIDDEN: a
// reader's mutations, and a worker's anything but its task mutations.
type rolesRule struct{}

var (
	_ graphql.HandlerExtension        = rolesRule{}
	_ graphql.OperationContextMutator = rolesRule{}
)

// ExtensionName names the extension for gqlgen.
func (rolesRule) ExtensionName() string { return "RolesRule" }

// Validate checks the extension's configuration.
func (rolesRule) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationContext refuses an operation the caller's role may not run.
func (rolesRule) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	return graph.Authorize(roleOf(ctx), oc.Operation)
}
