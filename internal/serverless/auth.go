package serverless

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
	"golang.org/x/sync/singleflight"
)

// The error types of a refused authentication (the DSL's standard errors).
const (
	errTypeAuthentication = "https://serverlessworkflow.io/spec/1.0.0/errors/authentication"
	errTypeAuthorization  = "https://serverlessworkflow.io/spec/1.0.0/errors/authorization"
)

// Bounds of the token cache.
const (
	// tokenMargin is how long before its expiry a cached token is no longer used.
	tokenMargin = 30 * time.Second
	// tokenNoExpiry is how long a token whose response gave no expires_in is kept.
	tokenNoExpiry = time.Minute
	// discoveryTTL is how long an OpenID configuration is kept.
	discoveryTTL = time.Hour
	// maxCached bounds the tokens and OpenID configurations a node keeps.
	maxCached = 256
)

// oauthSpec is a compiled oauth2 or oidc authentication: its properties, whose runtime
// expressions are evaluated when the call runs (a secret's properties when it names one).
type oauthSpec struct {
	oidc  bool
	props *template
}

// compileAuth compiles an endpoint's authentication into h: basic, bearer, oauth2 or oidc, given
// in place or by name (use: a name in use.authentications). A scheme's `use` names a secret that
// holds its properties.
func (c *compiler) compileAuth(h *httpCall, raw any, sc scope, ptr string) error {
	auth, ok := raw.(map[string]any)
	if !ok {
		return faultAt(ptr, "authentication must be an object: a scheme, or use and the name of one in use.authentications")
	}
	if ref, ok := auth["use"]; ok {
		name, _ := ref.(string)
		def, defined := c.authentications[name]
		if !defined {
			return faultAt(ptr+"/use", "authentication %q is not defined in use.authentications", name)
		}
		ptr = "/use/authentications/" + escapePointer(name)
		if auth, ok = def.(map[string]any); !ok || auth["use"] != nil {
			return faultAt(ptr, "a reusable authentication must be a scheme (basic, bearer, oauth2, oidc), not a reference")
		}
	}
	// fromSecret is the expression of a secret's property, for a scheme that names the secret.
	fromSecret := func(scheme map[string]any) (string, bool) {
		name, ok := scheme["use"].(string)
		if !ok {
			return "", false
		}
		q, _ := json.Marshal(name)
		return "${ $secret[" + string(q) + "] }", true
	}
	var err error
	for _, key := range []string{"basic", "bearer", "oauth2", "oidc"} {
		scheme, ok := auth[key].(map[string]any)
		if !ok {
			continue
		}
		sptr := ptr + "/" + key
		secret, bySecret := fromSecret(scheme)
		field := func(name string) any {
			if bySecret {
				return strings.TrimSuffix(secret, " }") + "." + name + " }"
			}
			return scheme[name]
		}
		switch key {
		case "basic":
			if h.user, err = compileTemplate(field("username"), sc, sptr+"/username"); err != nil {
				return err
			}
			h.password, err = compileTemplate(field("password"), sc, sptr+"/password")
			return err
		case "bearer":
			h.bearer, err = compileTemplate(field("token"), sc, sptr+"/token")
			return err
		}
		var props any = scheme
		if bySecret {
			props = secret
		} else if err := checkOAuth(scheme, key == "oidc", sptr); err != nil {
			return err
		}
		o := &oauthSpec{oidc: key == "oidc"}
		if o.props, err = compileTemplate(props, sc, sptr); err != nil {
			return err
		}
		h.oauth = o
		return nil
	}
	for k := range auth {
		return faultAt(ptr+"/"+escapePointer(k), "authentication %q is not supported by cairn yet (basic, bearer, oauth2 and oidc are)", k)
	}
	return faultAt(ptr, "authentication needs basic, bearer, oauth2 or oidc")
}

// oauthConfig is an oauth2 or oidc authentication's properties, evaluated.
type oauthConfig struct {
	authority, tokenPath, grant, clientAuth string
	clientID, clientSecret, username, pass  string
	scopes, audiences, issuers              []string
}

// checkOAuth refuses at deploy what cairn cannot do with the literal properties of an oauth2 or
// oidc authentication (those given by expressions are checked when the call runs).
func checkOAuth(props map[string]any, oidc bool, ptr string) error {
	if _, err := parseOAuth(props, oidc, true); err != nil {
		return faultAt(ptr+"/"+err.field, "%s", err.msg)
	}
	return nil
}

type oauthError struct{ field, msg string }

// parseOAuth reads an authentication's properties; lenient leaves runtime expressions unchecked.
func parseOAuth(v any, oidc, lenient bool) (*oauthConfig, *oauthError) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &oauthError{"", "the authentication's properties must be an object"}
	}
	str := func(v any) (string, bool) {
		s, ok := v.(string)
		return s, ok && !(lenient && isStrict(s))
	}
	list := func(key string) ([]string, *oauthError) {
		raw, ok := m[key]
		if !ok || raw == nil {
			return nil, nil
		}
		items, ok := raw.([]any)
		if !ok {
			if s, isStr := raw.(string); isStr && lenient && isStrict(s) {
				return nil, nil
			}
			return nil, &oauthError{key, key + " must be a list of strings"}
		}
		out := make([]string, 0, len(items))
		for _, it := range items {
			s, ok := it.(string)
			if !ok {
				return nil, &oauthError{key, key + " must be a list of strings"}
			}
			out = append(out, s)
		}
		return out, nil
	}
	for _, k := range []string{"subject", "actor"} {
		if m[k] != nil {
			return nil, &oauthError{k, fmt.Sprintf("token exchange (%s) is not supported by cairn yet", k)}
		}
	}
	c := &oauthConfig{tokenPath: "/oauth2/token", clientAuth: "client_secret_post"}
	if s, ok := m["authority"].(string); ok && s != "" {
		c.authority = s
		if u, err := url.Parse(s); !isStrict(s) && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
			return nil, &oauthError{"authority", fmt.Sprintf("the authority %q is not an http or https URI", s)}
		}
	} else if !lenient {
		return nil, &oauthError{"authority", "an oauth2 or oidc authentication needs its authority"}
	}
	if ep, ok := m["endpoints"].(map[string]any); ok && !oidc {
		if s, ok := ep["token"].(string); ok && s != "" {
			c.tokenPath = s
		}
	}
	if g, ok := str(m["grant"]); ok {
		c.grant = g
		if g != "client_credentials" && g != "password" {
			return nil, &oauthError{"grant", fmt.Sprintf("grant %q is not supported by cairn yet (client_credentials and password are)", g)}
		}
	} else if !lenient || m["grant"] == nil {
		return nil, &oauthError{"grant", "an oauth2 or oidc authentication needs its grant"}
	}
	if cl, ok := m["client"].(map[string]any); ok {
		c.clientID, _ = cl["id"].(string)
		c.clientSecret, _ = cl["secret"].(string)
		if a, ok := str(cl["authentication"]); ok {
			c.clientAuth = a
			if a != "client_secret_basic" && a != "client_secret_post" && a != "none" {
				return nil, &oauthError{"client/authentication", fmt.Sprintf("client authentication %q is not supported by cairn yet (client_secret_basic, client_secret_post and none are)", a)}
			}
		}
		if cl["assertion"] != nil {
			return nil, &oauthError{"client/assertion", "client assertions (private_key_jwt) are not supported by cairn yet"}
		}
	}
	if rq, ok := m["request"].(map[string]any); ok {
		if e, ok := str(rq["encoding"]); ok && e != "application/x-www-form-urlencoded" {
			return nil, &oauthError{"request/encoding", "cairn sends token requests as application/x-www-form-urlencoded only"}
		}
	}
	c.username, _ = m["username"].(string)
	c.pass, _ = m["password"].(string)
	var e *oauthError
	if c.scopes, e = list("scopes"); e != nil {
		return nil, e
	}
	if c.audiences, e = list("audiences"); e != nil {
		return nil, e
	}
	if c.issuers, e = list("issuers"); e != nil {
		return nil, e
	}
	if c.grant == "password" && len(c.audiences) > 0 {
		return nil, &oauthError{"audiences", "audiences are sent with the client_credentials grant only"}
	}
	return c, nil
}

// oauthToken is the access token of an oauth2 or oidc authentication, and its key in the node's
// cache: a cached one until shortly before it expires, else one requested from the authority's
// token endpoint (once for all the steps that want it at the same time).
func (r *run) oauthToken(t *task, o *oauthSpec, in any) (string, string, *Problem) {
	v, p := r.evalTpl(t, o.props, in, nil)
	if p != nil {
		return "", "", p
	}
	cfg, oe := parseOAuth(v, o.oidc, false)
	if oe != nil {
		return "", "", &Problem{Type: errTypeValidation, Status: 400, Title: "Invalid Authentication", Detail: oe.msg, Instance: t.path}
	}
	tokenURL := joinURL(cfg.authority, cfg.tokenPath)
	if o.oidc {
		if tokenURL, p = r.discoverTokenURL(t, cfg); p != nil {
			return "", "", p
		}
	}
	cache := &r.prog.http.tokens
	key := cacheKey("token", tokenURL, cfg.grant, cfg.clientAuth, cfg.clientID, cfg.clientSecret, cfg.username, cfg.pass,
		strings.Join(cfg.scopes, " "), strings.Join(cfg.audiences, " "))
	if tok, ok := cache.get(key, time.Now()); ok {
		return tok, key, nil
	}
	v, err, _ := cache.flight.Do(key, func() (any, error) {
		if tok, ok := cache.get(key, time.Now()); ok {
			return tok, nil
		}
		tok, p := r.requestToken(t, cfg, tokenURL)
		if p != nil {
			return nil, &ProblemError{Problem: *p}
		}
		until := time.Now().Add(tokenNoExpiry)
		if !tok.Expiry.IsZero() {
			until = tok.Expiry.Add(-tokenMargin)
		}
		cache.put(key, tok.AccessToken, until)
		return tok.AccessToken, nil
	})
	if err != nil {
		// Each step gets its own copy: the Problem is changed where it is stored.
		p := err.(*ProblemError).Problem
		p.Instance = t.path
		return "", "", &p
	}
	return v.(string), key, nil
}

// requestToken requests a token from an endpoint, within the node's HTTP options.
func (r *run) requestToken(t *task, cfg *oauthConfig, tokenURL string) (*oauth2.Token, *Problem) {
	u, err := url.Parse(tokenURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &Problem{Type: errTypeValidation, Status: 400, Title: "Invalid Authentication", Detail: fmt.Sprintf("the token endpoint %q is not an http or https URI", r.prog.redact.text(tokenURL)), Instance: t.path}
	}
	hr := r.prog.http
	if err := hr.opts.check(u.Hostname()); err != nil {
		return nil, &Problem{Type: errTypeCommunication, Status: 403, Title: "Host Not Allowed", Detail: err.Error(), Instance: t.path}
	}
	ctx := context.WithValue(hr.opts.AllowPrivate(r.ctx, u.Hostname()), oauth2.HTTPClient, hr.client)
	style := oauth2.AuthStyleInParams
	if cfg.clientAuth == "client_secret_basic" {
		style = oauth2.AuthStyleInHeader
	}
	var tok *oauth2.Token
	if cfg.grant == "password" {
		oc := &oauth2.Config{ClientID: cfg.clientID, ClientSecret: cfg.clientSecret, Scopes: cfg.scopes,
			Endpoint: oauth2.Endpoint{TokenURL: tokenURL, AuthStyle: style}}
		tok, err = oc.PasswordCredentialsToken(ctx, cfg.username, cfg.pass)
	} else {
		cc := &clientcredentials.Config{ClientID: cfg.clientID, ClientSecret: cfg.clientSecret, TokenURL: tokenURL, Scopes: cfg.scopes, AuthStyle: style}
		if len(cfg.audiences) > 0 {
			cc.EndpointParams = url.Values{"audience": cfg.audiences}
		}
		tok, err = cc.Token(ctx)
	}
	if err != nil {
		return nil, r.tokenRefused(t, u, err)
	}
	return tok, nil
}

// tokenRefused is the Problem of a token request that failed. An endpoint's refusal is an
// authentication error (authorization for 403); its body is left out, as it may echo the
// client's secret.
func (r *run) tokenRefused(t *task, u *url.URL, err error) *Problem {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.Response == nil {
		if strings.Contains(err.Error(), "access_token") {
			return &Problem{Type: errTypeCommunication, Status: 502, Title: "Invalid Token Response", Instance: t.path,
				Detail: fmt.Sprintf("the token endpoint %s answered without an access token", u.Redacted())}
		}
		return r.callFailed(t, u, err)
	}
	status := re.Response.StatusCode
	detail := fmt.Sprintf("the token endpoint %s refused the token request: %s", u.Redacted(), re.Response.Status)
	if re.ErrorCode != "" {
		detail += " (" + re.ErrorCode + ")"
	}
	detail = r.prog.redact.text(detail)
	switch {
	case status == http.StatusForbidden:
		return &Problem{Type: errTypeAuthorization, Status: 403, Title: "Authorization Refused", Detail: detail, Instance: t.path}
	case status >= 500:
		return &Problem{Type: errTypeCommunication, Status: status, Title: "Token Endpoint Failed", Detail: detail, Instance: t.path}
	}
	return &Problem{Type: errTypeAuthentication, Status: 401, Title: "Authentication Refused", Detail: detail, Instance: t.path}
}

// discoverTokenURL reads the token endpoint of an OpenID Connect authority from its configuration
// (authority/.well-known/openid-configuration), kept for an hour.
func (r *run) discoverTokenURL(t *task, cfg *oauthConfig) (string, *Problem) {
	const wellKnown = "/.well-known/openid-configuration"
	doc := cfg.authority
	if !strings.HasSuffix(strings.TrimSuffix(doc, "/"), wellKnown) {
		doc = joinURL(doc, wellKnown)
	}
	cache := &r.prog.http.tokens
	key := cacheKey("oidc", doc)
	var meta struct {
		Issuer        string `json:"issuer"`
		TokenEndpoint string `json:"token_endpoint"`
	}
	fail := func(format string, args ...any) (string, *Problem) {
		return "", &Problem{Type: errTypeCommunication, Status: 502, Title: "Invalid OpenID Configuration", Detail: r.prog.redact.text(fmt.Sprintf(format, args...)), Instance: t.path}
	}
	raw, ok := cache.get(key, time.Now())
	if !ok {
		u, err := url.Parse(doc)
		if err != nil {
			return fail("%q is not a URI", doc)
		}
		resp, _, body, p := r.exchange(t, &httpRequest{method: http.MethodGet, url: u, headers: map[string]string{"Accept": "application/json"}})
		if p != nil {
			return "", p
		}
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return "", &Problem{Type: errTypeCommunication, Status: resp.StatusCode, Title: "OpenID Configuration Unavailable",
				Detail: fmt.Sprintf("GET %s: %s", u.Redacted(), resp.Status), Instance: t.path}
		}
		raw = string(body)
		if err := json.Unmarshal(body, &meta); err != nil {
			return fail("the OpenID configuration at %s is not JSON: %v", u.Redacted(), err)
		}
		cache.put(key, raw, time.Now().Add(discoveryTTL))
	} else {
		_ = json.Unmarshal([]byte(raw), &meta)
	}
	if u, err := url.Parse(meta.TokenEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fail("the OpenID configuration at %s has no http or https token_endpoint", doc)
	}
	if len(cfg.issuers) > 0 && !contains(cfg.issuers, meta.Issuer) {
		return "", &Problem{Type: errTypeAuthentication, Status: 401, Title: "Untrusted Issuer", Instance: t.path,
			Detail: r.prog.redact.text(fmt.Sprintf("the issuer %q of %s is not among the authentication's issuers", meta.Issuer, doc))}
	}
	return meta.TokenEndpoint, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// joinURL is a path relative to an authority (kept as it is when it is a whole URL).
func joinURL(base, rel string) string {
	if strings.HasPrefix(rel, "http://") || strings.HasPrefix(rel, "https://") {
		return rel
	}
	return strings.TrimSuffix(base, "/") + "/" + strings.TrimPrefix(rel, "/")
}

// cacheKey is a digest of a cache entry's parts: the secrets among them are not kept in clear.
func cacheKey(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s", len(p), p)
	}
	return string(h.Sum(nil))
}

// tokenCache keeps values until a time, at most maxCached of them: a full cache drops the expired
// ones, then the one that expires first.
type tokenCache struct {
	mu      sync.Mutex
	entries map[string]cachedValue
	flight  singleflight.Group
}

type cachedValue struct {
	value string
	until time.Time
}

func (c *tokenCache) get(key string, now time.Time) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !now.Before(e.until) {
		return "", false
	}
	return e.value, true
}

func (c *tokenCache) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, key)
}

func (c *tokenCache) put(key, value string, until time.Time) {
	now := time.Now()
	if !now.Before(until) {
		return // expires within the margin: used once, not kept
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]cachedValue{}
	}
	if _, ok := c.entries[key]; !ok && len(c.entries) >= maxCached {
		first := ""
		for k, e := range c.entries {
			if !now.Before(e.until) {
				delete(c.entries, k)
			} else if first == "" || e.until.Before(c.entries[first].until) {
				first = k
			}
		}
		if len(c.entries) >= maxCached {
			delete(c.entries, first)
		}
	}
	c.entries[key] = cachedValue{value: value, until: until}
}
