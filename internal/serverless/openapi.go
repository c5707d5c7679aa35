package serverless

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"sigs.k8s.io/yaml"
)

// openapiCall is a compiled `call: openapi`: the operation is looked up in the document when the
// task runs (the document is fetched like any call, within the node's HTTP options), then made
// as an HTTP call.
type openapiCall struct {
	document    string // the document's URI
	docAuth     *httpCall
	operationID string
	parameters  *template
	call        *httpCall // authentication and output of the operation's call
}

func (c *compiler) compileOpenAPI(t *task, def map[string]any, sc scope) error {
	t.kind = kindOpenAPI
	ptr := t.path + "/with"
	with, ok := def["with"].(map[string]any)
	if !ok {
		return faultAt(ptr, "call: openapi needs with (document, operationId)")
	}
	o := &openapiCall{docAuth: &httpCall{}, call: &httpCall{output: "content"}}
	doc, _ := with["document"].(map[string]any)
	dptr := ptr + "/document/endpoint"
	endpoint := doc["endpoint"]
	if m, ok := endpoint.(map[string]any); ok {
		endpoint = m["uri"]
		if auth, ok := m["authentication"]; ok {
			if err := c.compileAuth(o.docAuth, auth, sc, dptr+"/authentication"); err != nil {
				return err
			}
		}
		dptr += "/uri"
	}
	o.document, _ = endpoint.(string)
	if u, err := url.Parse(o.document); o.document == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return faultAt(dptr, "call: openapi needs the http or https URI of its document")
	}
	if o.operationID, _ = with["operationId"].(string); o.operationID == "" {
		return faultAt(ptr+"/operationId", "call: openapi needs the operationId of the operation to call")
	}
	var err error
	if p, ok := with["parameters"]; ok {
		if _, isMap := p.(map[string]any); !isMap {
			return faultAt(ptr+"/parameters", "parameters must be an object of the operation's parameters")
		}
		if o.parameters, err = compileTemplate(p, sc, ptr+"/parameters"); err != nil {
			return err
		}
	}
	if auth, ok := with["authentication"]; ok {
		if err := c.compileAuth(o.call, auth, sc, ptr+"/authentication"); err != nil {
			return err
		}
	}
	if out, ok := with["output"].(string); ok {
		switch out {
		case "content", "response", "raw":
			o.call.output = out
		default:
			return faultAt(ptr+"/output", "output must be content, response or raw, not %q", out)
		}
	}
	t.openapi = o
	return nil
}

// callOpenAPI fetches the task's document, finds its operation and calls it.
func (r *run) callOpenAPI(t *task, in any) (any, *Problem) {
	o := t.openapi
	invalid := func(format string, args ...any) *Problem {
		return &Problem{Type: errTypeValidation, Status: 400, Title: "Invalid OpenAPI Call", Detail: fmt.Sprintf(format, args...), Instance: t.path}
	}
	docURL, _ := url.Parse(o.document)
	raw, p := r.fetchResource(t, docURL, "application/json, application/yaml", o.docAuth, in, "OpenAPI Document")
	if p != nil {
		return nil, p
	}
	doc, err := parseOpenAPI(raw)
	if err != nil {
		return nil, invalid("the document at %s: %v", o.document, err)
	}
	method, path, op, item := findOperation(doc, o.operationID)
	if op == nil {
		return nil, invalid("the document at %s has no operation %q", o.document, o.operationID)
	}
	base, err := serverURL(doc, docURL)
	if err != nil {
		return nil, invalid("the document at %s: %v", o.document, err)
	}
	// The call's authentication first: its parameters may read it as $authorization.
	auth := &httpRequest{}
	if p := r.evalAuth(t, o.call, in, auth); p != nil {
		return nil, p
	}
	r.authorize(auth)
	var params map[string]any
	if o.parameters != nil {
		v, p := r.evalTpl(t, o.parameters, in, nil)
		if p != nil {
			return nil, p
		}
		params, _ = v.(map[string]any)
	}
	req := &httpRequest{method: method, headers: map[string]string{}, output: o.call.output}
	used := map[string]bool{}
	query := url.Values{}
	var cookies []string
	for _, pr := range operationParameters(item, op) {
		v, ok := params[pr.Name]
		if !ok || v == nil {
			if pr.Required {
				return nil, invalid("operation %s needs the %s parameter %q", o.operationID, pr.In, pr.Name)
			}
			continue
		}
		used[pr.Name] = true
		switch pr.In {
		case openapi3.ParameterInPath:
			path = strings.ReplaceAll(path, "{"+pr.Name+"}", url.PathEscape(scalar(v)))
		case openapi3.ParameterInQuery:
			if list, isList := v.([]any); isList {
				for _, x := range list {
					query.Add(pr.Name, scalar(x))
				}
			} else {
				query.Set(pr.Name, scalar(v))
			}
		case openapi3.ParameterInHeader:
			req.headers[pr.Name] = scalar(v)
		case openapi3.ParameterInCookie:
			cookies = append(cookies, pr.Name+"="+url.QueryEscape(scalar(v)))
		}
	}
	if len(cookies) > 0 {
		req.headers["Cookie"] = strings.Join(cookies, "; ")
	}
	if op.RequestBody != nil {
		// The body is the parameter named body, or else the parameters the operation does not
		// declare.
		if b, ok := params["body"]; ok && !used["body"] {
			req.body, req.hasBody = b, true
		} else {
			rest := map[string]any{}
			for k, v := range params {
				if !used[k] {
					rest[k] = v
				}
			}
			if len(rest) > 0 {
				req.body, req.hasBody = rest, true
			}
		}
	}
	u, err := url.Parse(strings.TrimSuffix(base, "/") + path)
	if err != nil {
		return nil, invalid("operation %s: %v", o.operationID, err)
	}
	if len(query) > 0 {
		u.RawQuery = query.Encode()
	}
	req.url = u
	req.basic, req.user, req.password, req.bearer, req.issued, req.tokenKey = auth.basic, auth.user, auth.password, auth.bearer, auth.issued, auth.tokenKey
	return r.sendHTTP(t, req)
}

// parseOpenAPI reads an OpenAPI 3 or Swagger 2 document (JSON or YAML); Swagger 2 is converted
// to OpenAPI 3. References to other documents are refused (they would be fetched unchecked).
func parseOpenAPI(raw []byte) (*openapi3.T, error) {
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("neither JSON nor YAML: %w", err)
	}
	var head struct {
		Swagger string `json:"swagger"`
		OpenAPI string `json:"openapi"`
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return nil, fmt.Errorf("not an object: %w", err)
	}
	if strings.HasPrefix(head.Swagger, "2") {
		var doc2 openapi2.T
		if err := json.Unmarshal(js, &doc2); err != nil {
			return nil, fmt.Errorf("invalid Swagger 2 document: %w", err)
		}
		return openapi2conv.ToV3(&doc2)
	}
	if !strings.HasPrefix(head.OpenAPI, "3") {
		return nil, fmt.Errorf("neither OpenAPI 3 (openapi) nor Swagger 2 (swagger)")
	}
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = false
	return loader.LoadFromData(js)
}

// findOperation finds an operation by its id: its method, path template and path item.
func findOperation(doc *openapi3.T, id string) (string, string, *openapi3.Operation, *openapi3.PathItem) {
	if doc.Paths == nil {
		return "", "", nil, nil
	}
	paths := doc.Paths.Map()
	keys := make([]string, 0, len(paths))
	for k := range paths {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, path := range keys {
		item := paths[path]
		for method, op := range item.Operations() {
			if op != nil && op.OperationID == id {
				return method, path, op, item
			}
		}
	}
	return "", "", nil, nil
}

// operationParameters are an operation's parameters: its path item's, overridden by its own.
func operationParameters(item *openapi3.PathItem, op *openapi3.Operation) []*openapi3.Parameter {
	byKey := map[string]*openapi3.Parameter{}
	var order []string
	for _, list := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, ref := range list {
			if ref == nil || ref.Value == nil {
				continue
			}
			k := ref.Value.In + "\x00" + ref.Value.Name
			if _, seen := byKey[k]; !seen {
				order = append(order, k)
			}
			byKey[k] = ref.Value
		}
	}
	out := make([]*openapi3.Parameter, len(order))
	for i, k := range order {
		out[i] = byKey[k]
	}
	return out
}

// serverURL is the base URL of a document's first server (its variables at their defaults),
// resolved against the document's own URL; without servers, the document's host.
func serverURL(doc *openapi3.T, docURL *url.URL) (string, error) {
	raw := "/"
	if len(doc.Servers) > 0 && doc.Servers[0] != nil {
		s := doc.Servers[0]
		raw = s.URL
		for name, v := range s.Variables {
			if v != nil {
				raw = strings.ReplaceAll(raw, "{"+name+"}", v.Default)
			}
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("invalid server URL %q: %w", raw, err)
	}
	u = docURL.ResolveReference(u)
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("server URL %q is not http or https", u)
	}
	return u.String(), nil
}

// scalar is a parameter's value as text.
func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any, []any:
		b, _ := json.Marshal(x)
		return string(b)
	}
	return fmt.Sprint(v)
}

// fetchResource GETs an external resource a task reads (an OpenAPI or AsyncAPI document, a proto,
// a cataloged function) within the node's HTTP options, with the resource's authentication (nil:
// none): its body, or the task's Problem, a communication error naming what was unavailable when
// the answer is not 2xx.
func (r *run) fetchResource(t *task, u *url.URL, accept string, auth *httpCall, in any, what string) ([]byte, *Problem) {
	req := &httpRequest{method: http.MethodGet, url: u, headers: map[string]string{"Accept": accept}}
	if auth != nil {
		if p := r.evalAuth(t, auth, in, req); p != nil {
			return nil, p
		}
	}
	resp, _, raw, p := r.exchange(t, req)
	if p != nil {
		return nil, p
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &Problem{Type: errTypeCommunication, Status: resp.StatusCode, Title: what + " Unavailable",
			Detail: fmt.Sprintf("GET %s: %s", u.Redacted(), resp.Status), Instance: t.path}
	}
	return raw, nil
}
