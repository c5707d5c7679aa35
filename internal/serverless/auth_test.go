package serverless_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// authServer is an OAuth2 authority and the API it protects: its token endpoint issues tokens to
// the client "cairn" with the secret "s3cret" (client_secret_basic or client_secret_post), for the
// client_credentials and password grants, and counts its requests; /api echoes the Authorization
// it got.
type authServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []map[string]string // the token requests: their form and client authentication
	expires  int
	revoked  map[string]bool // tokens the API refuses
}

func newAuthServer(t *testing.T) *authServer {
	s := &authServer{expires: 3600, revoked: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /realm/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": s.URL + "/realm", "token_endpoint": s.URL + "/realm/protocol/token"})
	})
	token := func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		req := map[string]string{"path": r.URL.Path}
		for k := range r.PostForm {
			req[k] = r.PostForm.Get(k)
		}
		id, secret, basic := r.BasicAuth()
		if basic {
			req["auth"] = "basic"
		} else {
			id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
			req["auth"] = "post"
		}
		s.mu.Lock()
		s.requests = append(s.requests, req)
		n, expires := len(s.requests), s.expires
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case id == "forbidden":
			w.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": "access_denied"})
		case id != "cairn" || secret != "s3cret":
			// The refusal echoes the secret it got: the task's fault must not.
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": "invalid_client", "error_description": "bad secret " + secret})
		default:
			_ = json.NewEncoder(w).Encode(map[string]any{"access_token": fmt.Sprintf("tok-%d", n), "token_type": "Bearer", "expires_in": expires})
		}
	}
	mux.HandleFunc("POST /oauth2/token", token)
	mux.HandleFunc("POST /realm/protocol/token", token)
	mux.HandleFunc("POST /custom/token", token)
	mux.HandleFunc("GET /api", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		revoked := s.revoked[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		s.mu.Unlock()
		if revoked {
			http.Error(w, "revoked", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"authorization": r.Header.Get("Authorization")})
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func (s *authServer) tokenRequests() []map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]string(nil), s.requests...)
}

// authDoc is a document whose two tasks call the API with the authentication auth (YAML, as the
// value of authentication:), with use (YAML, the document's use) when not empty.
func authDoc(name, use, auth, api string) string {
	if use != "" {
		use = "use:\n" + use + "\n"
	}
	return fmt.Sprintf(`
document: {dsl: '1.0.0', namespace: auth, name: %s, version: '1.0.0'}
%sdo:
  - first:
      call: http
      with: {method: get, endpoint: {uri: '%s/api', authentication: %s}}
      export: {as: '${ {first: .authorization} }'}
  - second:
      call: http
      with: {method: get, endpoint: {uri: '%s/api', authentication: %s}}
      output: {as: '${ {first: $context.first, second: .authorization} }'}
`, name, use, api, auth, api, auth)
}

// TestOAuth2Authentication gets tokens from a local authority: the calls carry the bearer token, a
// second call within its expiry reuses it (one token request for both), the client authenticates
// by basic or post, scopes and audiences are sent, an OpenID Connect authority's token endpoint is
// discovered, a reusable authentication is used by name and from a secret, and a refusing token
// endpoint faults the task with the authentication (or authorization) error, without the secret.
func TestOAuth2Authentication(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		s := newAuthServer(t)
		n := newNodeWith(t, store, serverless.Options{HTTP: serverless.HTTPOptions{Allow: []string{"127.0.0.1"}},
			Secrets: map[string]any{"client": "s3cret", "oidcClient": map[string]any{"authority": s.URL + "/realm", "grant": "password",
				"client": map[string]any{"id": "cairn", "secret": "s3cret"}, "username": "ada", "password": "lovelace"},
				"codeClient": map[string]any{"authority": s.URL, "grant": "authorization_code", "client": map[string]any{"id": "cairn"}}}})
		n.startWorker(t)
		run := func(t *testing.T, doc string) *persistence.Workflow {
			def := n.deploy(t, doc)
			return n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
		}
		clientCredentials := fmt.Sprintf(`{oauth2: {authority: '%s', grant: client_credentials, client: {id: cairn, secret: '${ $secret.client }', authentication: client_secret_basic}, scopes: [read, write], audiences: [api]}}`, s.URL)

		w := run(t, authDoc("cc", "", clientCredentials, s.URL))
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.Equal(t, map[string]any{"first": "Bearer [secret]", "second": "Bearer [secret]"}, output(t, w), "the token is hidden like a secret where the workflow stores it")
		reqs := s.tokenRequests()
		require.Len(t, reqs, 1, "the second call reused the first one's token")
		require.Equal(t, map[string]string{"path": "/oauth2/token", "grant_type": "client_credentials", "scope": "read write", "audience": "api", "auth": "basic"}, reqs[0])

		// Another workflow of the node reuses the token too.
		w = run(t, authDoc("cc2", "", clientCredentials, s.URL))
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.Len(t, s.tokenRequests(), 1)

		t.Run("the calls carry the token", func(t *testing.T) {
			doc := strings.Replace(authDoc("echo", "", clientCredentials, s.URL), "output: {as: '${ {first: $context.first, second: .authorization} }'}",
				"output: {as: '${ {scheme: $authorization.scheme, fromServer: (.authorization | startswith(\"Bearer tok-\"))} }'}", 1)
			w := run(t, doc)
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			require.Equal(t, map[string]any{"scheme": "Bearer", "fromServer": true}, output(t, w))
		})

		t.Run("a token the API refuses is not used again", func(t *testing.T) {
			s.mu.Lock()
			s.revoked["tok-1"] = true
			s.mu.Unlock()
			before := len(s.tokenRequests())
			w := run(t, authDoc("revoked", "", clientCredentials, s.URL))
			require.Equal(t, persistence.StatusFailed, w.Status)
			require.Equal(t, float64(401), problemFields(t, w)["status"])
			require.Len(t, s.tokenRequests(), before, "the cached token was used")
			w = run(t, authDoc("renewed", "", clientCredentials, s.URL))
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			require.Len(t, s.tokenRequests(), before+1, "a new token replaced the refused one")
		})

		t.Run("OpenID Connect discovery, the password grant and a secret's properties", func(t *testing.T) {
			before := len(s.tokenRequests())
			w := run(t, authDoc("oidc", "", `{oidc: {use: oidcClient}}`, s.URL))
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			reqs := s.tokenRequests()
			require.Len(t, reqs, before+1, "both calls used one token")
			last := reqs[len(reqs)-1]
			require.Equal(t, map[string]string{"path": "/realm/protocol/token", "grant_type": "password", "username": "ada", "password": "lovelace",
				"client_id": "cairn", "client_secret": "s3cret", "auth": "post"}, last)
		})

		t.Run("a reusable authentication by name, with its own token endpoint", func(t *testing.T) {
			before := len(s.tokenRequests())
			use := fmt.Sprintf(`  authentications:
    api:
      oauth2: {authority: '%s', endpoints: {token: /custom/token}, grant: client_credentials, client: {id: cairn, secret: s3cret}}`, s.URL)
			w := run(t, authDoc("reusable", use, `{use: api}`, s.URL))
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			reqs := s.tokenRequests()
			require.Len(t, reqs, before+1)
			require.Equal(t, "/custom/token", reqs[before]["path"])
			require.Equal(t, "post", reqs[before]["auth"], "client_secret_post by default")
		})

		t.Run("a refusing token endpoint faults with the authentication error", func(t *testing.T) {
			bad := fmt.Sprintf(`{oauth2: {authority: '%s', grant: client_credentials, client: {id: cairn, secret: '${ $secret.client + "-wrong" }'}}}`, s.URL)
			w := run(t, authDoc("refused", "", bad, s.URL))
			require.Equal(t, persistence.StatusFailed, w.Status)
			p := problemFields(t, w)
			require.Equal(t, "https://serverlessworkflow.io/spec/1.0.0/errors/authentication", p["type"])
			require.Equal(t, float64(401), p["status"])
			require.Contains(t, p["detail"], "invalid_client")
			require.NotContains(t, lastError(w), "s3cret")

			forbidden := fmt.Sprintf(`{oauth2: {authority: '%s', grant: client_credentials, client: {id: forbidden, secret: x}}}`, s.URL)
			w = run(t, authDoc("forbidden", "", forbidden, s.URL))
			require.Equal(t, persistence.StatusFailed, w.Status)
			p = problemFields(t, w)
			require.Equal(t, "https://serverlessworkflow.io/spec/1.0.0/errors/authorization", p["type"])
			require.Equal(t, float64(403), p["status"])
		})

		t.Run("a secret's properties cairn cannot use fault with a validation error", func(t *testing.T) {
			w := run(t, authDoc("code", "", `{oauth2: {use: codeClient}}`, s.URL))
			require.Equal(t, persistence.StatusFailed, w.Status)
			p := problemFields(t, w)
			require.Equal(t, "https://serverlessworkflow.io/spec/1.0.0/errors/validation", p["type"])
			require.Equal(t, "Invalid Authentication", p["title"])
		})

		t.Run("steps that want a token at once share one request", func(t *testing.T) {
			before := len(s.tokenRequests())
			auth := fmt.Sprintf(`{oauth2: {authority: '%s', grant: client_credentials, client: {id: cairn, secret: s3cret}, scopes: [fork]}}`, s.URL)
			var branches strings.Builder
			for i := range 4 {
				fmt.Fprintf(&branches, "          - b%d: {call: http, with: {method: get, endpoint: {uri: '%s/api', authentication: %s}}}\n", i, s.URL, auth)
			}
			w := run(t, fmt.Sprintf("document: {dsl: '1.0.0', namespace: auth, name: fork, version: '1.0.0'}\ndo:\n  - all:\n      fork:\n        branches:\n%s", branches.String()))
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			require.Len(t, s.tokenRequests(), before+1)
		})

		t.Run("a token that expires within the margin is not kept", func(t *testing.T) {
			s.mu.Lock()
			s.expires = 10
			s.mu.Unlock()
			before := len(s.tokenRequests())
			short := fmt.Sprintf(`{oauth2: {authority: '%s', grant: client_credentials, client: {id: cairn, secret: s3cret}, scopes: [short]}}`, s.URL)
			w := run(t, authDoc("short", "", short, s.URL))
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			require.Len(t, s.tokenRequests(), before+2)
		})
	})
}

// TestAuthenticationRefusedAtDeploy: what cairn cannot do is refused with the pointer at fault.
func TestAuthenticationRefusedAtDeploy(t *testing.T) {
	t.Parallel()
	c := serverless.NewCompiler(serverless.Options{})
	cases := map[string]struct{ use, auth, ptr string }{
		"unknown reusable":  {auth: `{use: nope}`, ptr: "/do/0/first/with/endpoint/authentication/use"},
		"unsupported grant": {auth: `{oauth2: {authority: 'https://a.example', grant: authorization_code, client: {id: x}}}`, ptr: "/do/0/first/with/endpoint/authentication/oauth2/grant"},
		"jwt client":        {auth: `{oidc: {authority: 'https://a.example', grant: client_credentials, client: {id: x, authentication: private_key_jwt}}}`, ptr: "/do/0/first/with/endpoint/authentication/oidc/client/authentication"},
		"digest":            {auth: `{digest: {username: a, password: b}}`, ptr: "/do/0/first/with/endpoint/authentication/digest"},
		"reusable fault":    {use: "  authentications:\n    a: {oauth2: {authority: 'ftp://x', grant: password}}", auth: `{use: a}`, ptr: "/use/authentications/a/oauth2/authority"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := c.Compile([]byte(authDoc("refused", tc.use, tc.auth, "https://api.example")))
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.ptr)
		})
	}
}
