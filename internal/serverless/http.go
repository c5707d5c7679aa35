package serverless

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
)

// HTTPOptions bounds what `call: http` tasks may do.
type HTTPOptions struct {
	// Allow lists the host patterns calls may reach (example.com, *.example.com, 10.0.0.5); empty
	// allows every host not denied. A host allowed by name may resolve to a private address.
	Allow []string
	// Deny lists host patterns calls may never reach; it wins over Allow.
	Deny []string
	// Timeout bounds one call (DefaultHTTPTimeout when zero).
	Timeout time.Duration
	// MaxResponseBytes bounds a response's body (DefaultMaxResponseBytes when zero).
	MaxResponseBytes int64
	// Transport replaces the default transport (tests); the address checks are then its own.
	Transport http.RoundTripper
}

// Defaults of HTTPOptions.
const (
	DefaultHTTPTimeout      = 30 * time.Second
	DefaultMaxResponseBytes = 1 << 20
)

// httpCall is a compiled `call: http`.
type httpCall struct {
	method   string
	uri      string    // a URI template: {name} is replaced by the input's top-level field
	uriExpr  *expr     // or a runtime expression
	headers  *template // nil: none
	query    *template
	body     *template
	output   string // content, response or raw
	user     *template
	password *template
	bearer   *template
	oauth    *oauthSpec // oauth2 or oidc (auth.go)
}

var uriParam = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)

func (c *compiler) compileHTTP(t *task, def map[string]any, sc scope) error {
	ptr := t.path + "/with"
	with, ok := def["with"].(map[string]any)
	if !ok {
		return faultAt(ptr, "call: http needs with (method, endpoint)")
	}
	h := &httpCall{output: "content"}
	h.method, _ = with["method"].(string)
	h.method = strings.ToUpper(h.method)
	if h.method == "" {
		return faultAt(ptr+"/method", "call: http needs a method")
	}
	endpoint := with["endpoint"]
	eptr := ptr + "/endpoint"
	if m, ok := endpoint.(map[string]any); ok {
		endpoint = m["uri"]
		if auth, ok := m["authentication"]; ok {
			if err := c.compileAuth(h, auth, sc, eptr+"/authentication"); err != nil {
				return err
			}
		}
		eptr += "/uri"
	}
	uri, _ := endpoint.(string)
	if uri == "" {
		return faultAt(eptr, "call: http needs an endpoint URI")
	}
	if isStrict(uri) {
		x, err := compileExpr(uri, sc, eptr)
		if err != nil {
			return err
		}
		h.uriExpr = x
	} else {
		u, err := url.Parse(uriParam.ReplaceAllString(uri, "x"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return faultAt(eptr, "%q is not an http or https URI", uri)
		}
		h.uri = uri
	}
	var err error
	for key, dst := range map[string]**template{"headers": &h.headers, "query": &h.query, "body": &h.body} {
		if v, ok := with[key]; ok {
			if *dst, err = compileValueOrExpr(v, sc, ptr+"/"+key); err != nil {
				return err
			}
		}
	}
	if o, ok := with["output"].(string); ok {
		switch o {
		case "content", "response", "raw":
			h.output = o
		default:
			return faultAt(ptr+"/output", "output must be content, response or raw, not %q", o)
		}
	}
	t.http = h
	return nil
}

// httpRunner makes the calls of a program, within its options.
type httpRunner struct {
	opts   HTTPOptions
	client *http.Client
	tokens tokenCache // OAuth2 tokens and OpenID configurations, shared by the node's steps
}

type allowPrivateKey struct{}

func newHTTPRunner(opts HTTPOptions) *httpRunner {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultHTTPTimeout
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	rt := opts.Transport
	if rt == nil {
		guard := ssrf.New(ssrf.WithAnyPort())
		dialer := &net.Dialer{Timeout: 10 * time.Second,
			// The address about to be dialled, after DNS and before connect: a name that resolves
			// to a private, loopback, link-local or reserved address is refused unless its host
			// was allowed by name. Refusing before connect keeps open and closed ports alike.
			ControlContext: func(ctx context.Context, network, address string, c syscall.RawConn) error {
				if ctx.Value(allowPrivateKey{}) != nil {
					return nil
				}
				if err := guard.Safe(network, address, c); err != nil {
					return fmt.Errorf("%w: %w", errAddressRefused, err)
				}
				return nil
			}}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.Proxy = nil // a proxy would hide the address the checks above see
		tr.DialContext = dialer.DialContext
		rt = tr
	}
	client := &http.Client{Transport: rt, Timeout: opts.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("stopped after 5 redirects")
			}
			return opts.check(req.URL.Hostname())
		}}
	return &httpRunner{opts: opts, client: client}
}

// errAddressRefused marks a dial refused by the address check (never connected).
var errAddressRefused = errors.New("address refused")

// matchHost reports whether a host matches a pattern: equal, or *.suffix for its subdomains.
func matchHost(pattern, host string) bool {
	pattern, host = strings.ToLower(pattern), strings.ToLower(host)
	if strings.HasPrefix(pattern, "*.") {
		return strings.HasSuffix(host, pattern[1:])
	}
	ok, _ := path.Match(pattern, host)
	return ok || pattern == host
}

// check refuses a host the options deny or do not allow.
func (o HTTPOptions) check(host string) error {
	for _, p := range o.Deny {
		if matchHost(p, host) {
			return fmt.Errorf("host %s is denied by --http-deny", host)
		}
	}
	if len(o.Allow) == 0 {
		return nil
	}
	for _, p := range o.Allow {
		if matchHost(p, host) {
			return nil
		}
	}
	return fmt.Errorf("host %s is not in --http-allow", host)
}

func (o HTTPOptions) allowedByName(host string) bool {
	for _, p := range o.Allow {
		if matchHost(p, host) {
			return true
		}
	}
	return false
}

// httpRequest is a request of a task, its expressions evaluated.
type httpRequest struct {
	method   string
	url      *url.URL
	headers  map[string]string
	body     any
	hasBody  bool
	basic    bool
	user     string
	password string
	bearer   string
	// issued marks a bearer token the node obtained (OAuth2, OpenID Connect): hidden as a secret.
	issued   bool
	tokenKey string // its key in the node's cache, forgotten when the endpoint refuses it
	output   string // content, response or raw
}

// callHTTP makes the call of task t with its (transformed) input and returns its output.
func (r *run) callHTTP(t *task, in any) (any, *Problem) {
	h := t.http
	uri := h.uri
	if h.uriExpr != nil {
		v, err := h.uriExpr.eval(r.ctx, in, r.vars(t, in, nil))
		if err != nil {
			return nil, expressionProblem(t.path, err)
		}
		uri, _ = v.(string)
	} else {
		fields, _ := in.(map[string]any)
		uri = uriParam.ReplaceAllStringFunc(uri, func(m string) string {
			v, ok := fields[m[1:len(m)-1]]
			if !ok || v == nil {
				return ""
			}
			return url.PathEscape(fmt.Sprint(v))
		})
	}
	u, err := url.Parse(uri)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, &Problem{Type: errTypeValidation, Status: 400, Title: "Invalid Endpoint", Detail: fmt.Sprintf("%q is not an http or https URI", uri), Instance: t.path}
	}
	req := &httpRequest{method: h.method, url: u, output: h.output, headers: map[string]string{}}
	// The authentication first: the rest of the call may read it as $authorization.
	if p := r.evalAuth(t, h, in, req); p != nil {
		return nil, p
	}
	r.authorize(req)
	// headers and query are objects, or expressions that give one (or null).
	evalMap := func(tpl *template, what string) (map[string]any, *Problem) {
		if tpl == nil {
			return nil, nil
		}
		v, p := r.evalTpl(t, tpl, in, nil)
		if p != nil {
			return nil, p
		}
		m, ok := v.(map[string]any)
		if !ok && v != nil {
			return nil, &Problem{Type: errTypeExpression, Status: 400, Title: "Expression Error",
				Detail: fmt.Sprintf("%s must be an object, not %T", what, v), Instance: t.path + "/with/" + what}
		}
		return m, nil
	}
	query, p := evalMap(h.query, "query")
	if p != nil {
		return nil, p
	}
	if len(query) > 0 {
		q := u.Query()
		for k, v := range query {
			q.Set(k, fmt.Sprint(v))
		}
		u.RawQuery = q.Encode()
	}
	if h.body != nil {
		v, p := r.evalTpl(t, h.body, in, nil)
		if p != nil {
			return nil, p
		}
		req.body, req.hasBody = v, true
	}
	headers, p := evalMap(h.headers, "headers")
	if p != nil {
		return nil, p
	}
	for k, v := range headers {
		req.headers[k] = fmt.Sprint(v)
	}
	return r.sendHTTP(t, req)
}

// evalAuth evaluates a call's authentication into its request: basic, bearer, or the token of
// an oauth2 or oidc one (auth.go).
func (r *run) evalAuth(t *task, h *httpCall, in any, req *httpRequest) *Problem {
	if h.user != nil {
		user, p1 := r.evalTpl(t, h.user, in, nil)
		pass, p2 := r.evalTpl(t, h.password, in, nil)
		if p1 != nil {
			return p1
		}
		if p2 != nil {
			return p2
		}
		req.basic, req.user, req.password = true, fmt.Sprint(user), fmt.Sprint(pass)
	}
	if h.bearer != nil {
		tok, p := r.evalTpl(t, h.bearer, in, nil)
		if p != nil {
			return p
		}
		req.bearer = fmt.Sprint(tok)
	}
	if h.oauth != nil {
		tok, key, p := r.oauthToken(t, h.oauth, in)
		if p != nil {
			return p
		}
		req.bearer, req.issued, req.tokenKey = tok, true, key
	}
	return nil
}

// sendHTTP makes a request within the node's HTTP options and shapes its output.
func (r *run) sendHTTP(t *task, req *httpRequest) (any, *Problem) {
	resp, sent, raw, p := r.exchange(t, req)
	if p != nil {
		return nil, p
	}
	if resp.StatusCode == http.StatusUnauthorized && req.tokenKey != "" {
		r.prog.http.tokens.forget(req.tokenKey) // revoked, say: the next attempt gets another
	}
	fail := func(typ string, status int, title, detail string) *Problem {
		return &Problem{Type: typ, Status: status, Title: title, Detail: detail, Instance: t.path}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		detail := string(raw)
		if len(detail) > 512 {
			detail = detail[:512]
		}
		return nil, fail(errTypeCommunication, resp.StatusCode, "HTTP "+resp.Status, detail)
	}
	var content any = string(raw)
	if strings.Contains(resp.Header.Get("Content-Type"), "json") && len(raw) > 0 {
		if err := json.Unmarshal(raw, &content); err != nil {
			return nil, fail(errTypeCommunication, 502, "Invalid JSON Response", err.Error())
		}
	}
	switch req.output {
	case "raw":
		// In base64 a secret the body echoes could not be found again: hidden before encoding.
		return base64.StdEncoding.EncodeToString([]byte(r.prog.redact.text(string(raw)))), nil
	case "response":
		return map[string]any{
			"request":    map[string]any{"method": req.method, "uri": sent.URL.String(), "headers": flatHeaders(sent.Header, true)},
			"headers":    flatHeaders(resp.Header, false),
			"statusCode": resp.StatusCode,
			"content":    content,
		}, nil
	}
	return content, nil
}

// exchange sends a request and reads its response's body, within the node's HTTP options: the
// hosts it may reach, the time a call may take (and the task's deadline), the size of a response.
func (r *run) exchange(t *task, hreq *httpRequest) (*http.Response, *http.Request, []byte, *Problem) {
	hr := r.prog.http
	fail := func(typ string, status int, title, detail string) *Problem {
		return &Problem{Type: typ, Status: status, Title: title, Detail: detail, Instance: t.path}
	}
	u := hreq.url
	if err := hr.opts.check(u.Hostname()); err != nil {
		return nil, nil, nil, fail(errTypeCommunication, 403, "Host Not Allowed", err.Error())
	}
	var body io.Reader
	if hreq.hasBody {
		b, err := json.Marshal(hreq.body)
		if err != nil {
			return nil, nil, nil, fail(errTypeRuntime, 400, "Invalid Body", err.Error())
		}
		body = bytes.NewReader(b)
	}
	ctx := r.ctx
	if hr.opts.allowedByName(u.Hostname()) {
		ctx = context.WithValue(ctx, allowPrivateKey{}, true)
	}
	req, err := http.NewRequestWithContext(ctx, hreq.method, u.String(), body)
	if err != nil {
		return nil, nil, nil, fail(errTypeValidation, 400, "Invalid Request", err.Error())
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hreq.headers {
		req.Header.Set(k, v)
	}
	if hreq.basic {
		req.SetBasicAuth(hreq.user, hreq.password)
	}
	if hreq.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+hreq.bearer)
	}
	resp, err := hr.client.Do(req)
	if err != nil {
		return nil, nil, nil, r.callFailed(t, u, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, hr.opts.MaxResponseBytes+1))
	if err != nil {
		// The headers came in time but not the whole body: a slow endpoint times out all the same.
		return nil, nil, nil, r.callFailed(t, u, err)
	}
	if int64(len(raw)) > hr.opts.MaxResponseBytes {
		return nil, nil, nil, fail(errTypeCommunication, 502, "HTTP Response Too Large", fmt.Sprintf("the response is larger than %d bytes", hr.opts.MaxResponseBytes))
	}
	return resp, req, raw, nil
}

// callFailed is the Problem of a call that got no whole response: a refused address, a timeout
// (the call's --http-timeout or the task's deadline), or another failure to communicate.
func (r *run) callFailed(t *task, u *url.URL, err error) *Problem {
	var ne net.Error
	switch {
	case errors.Is(err, errAddressRefused):
		// One answer whatever the address and port: the task learns nothing of what listens there.
		return &Problem{Type: errTypeCommunication, Status: 403, Title: "Address Not Allowed", Instance: t.path,
			Detail: fmt.Sprintf("host %s resolves to a private, loopback, link-local or reserved address; allow the host by name with --http-allow", u.Hostname())}
	case r.ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded):
		return &Problem{Type: errTypeTimeout, Status: 408, Title: "HTTP Timeout", Instance: t.path,
			Detail: fmt.Sprintf("%s did not complete before the task's deadline", u.Redacted())}
	case errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded):
		return &Problem{Type: errTypeTimeout, Status: 408, Title: "HTTP Timeout", Instance: t.path,
			Detail: fmt.Sprintf("%s did not complete within %s (--http-timeout)", u.Redacted(), r.prog.http.opts.Timeout)}
	}
	return &Problem{Type: errTypeCommunication, Status: 503, Title: "HTTP Call Failed", Detail: err.Error(), Instance: t.path}
}

// flatHeaders is a header as a JSON object (the Authorization of a request is left out: it is a
// secret, and the output is stored in history).
func flatHeaders(h http.Header, request bool) map[string]any {
	out := map[string]any{}
	for k, vs := range h {
		if request && strings.EqualFold(k, "Authorization") {
			continue
		}
		out[k] = strings.Join(vs, ", ")
	}
	return out
}
