package serverless

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/cairnflow/cairn/workflow"
)

// A cataloged function is called as name:version@catalog (a catalog of use.catalogs, whose
// endpoint holds functions/<name>/<version>/function.yaml) or by the URI of its function.yaml.
// Its definition is fetched when the call runs, not at deploy: every node compiles a deployed
// document again from its source, and a catalog unreachable then (or changed since) must not make
// one node's states differ from another's. The call is one state; the function's task runs within
// its step, so it may be a call (http, openapi, or a function served by name), a set, a raise or a
// run: shell or script.

// Bounds of cataloged functions.
const (
	// maxFunctionBytes bounds a function.yaml.
	maxFunctionBytes = 256 << 10
	// catalogTTL is how long a node keeps a fetched function.yaml.
	catalogTTL = 5 * time.Minute
)

var catalogName = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]*):([A-Za-z0-9][A-Za-z0-9.+_-]*)@([A-Za-z0-9][A-Za-z0-9._-]*)$`)

// catalogRef is where a cataloged function's definition is.
type catalogRef struct {
	url  string
	auth *httpCall // the catalog endpoint's authentication; nil: none
}

// isCatalogRef reports whether a call names a cataloged function.
func isCatalogRef(name string) bool {
	return catalogName.MatchString(name) || strings.HasPrefix(name, "http://") || strings.HasPrefix(name, "https://")
}

func (c *compiler) compileCatalogCall(t *task, def map[string]any, name string, sc scope) error {
	t.kind = kindFunction
	ptr := t.path + "/call"
	ref := &catalogRef{}
	if m := catalogName.FindStringSubmatch(name); m != nil {
		cat, ok := c.catalogs[m[3]].(map[string]any)
		if !ok {
			return faultAt(ptr, "catalog %q is not defined in use.catalogs (cairn has no default catalog)", m[3])
		}
		eptr := "/use/catalogs/" + escapePointer(m[3]) + "/endpoint"
		endpoint := cat["endpoint"]
		if em, ok := endpoint.(map[string]any); ok {
			endpoint = em["uri"]
			if auth, ok := em["authentication"]; ok {
				ref.auth = &httpCall{}
				if err := c.compileAuth(ref.auth, auth, sc, eptr+"/authentication"); err != nil {
					return err
				}
			}
			eptr += "/uri"
		}
		root, _ := endpoint.(string)
		if u, err := url.Parse(root); root == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return faultAt(eptr, "a catalog's endpoint must be an http or https URI")
		}
		ref.url = joinURL(rawGitHub(root), "functions/"+m[1]+"/"+m[2]+"/function.yaml")
	} else {
		u, err := url.Parse(name)
		if err != nil || u.Host == "" {
			return faultAt(ptr, "%q is not an http or https URI", name)
		}
		if p := strings.ToLower(u.Path); !strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml") && !strings.HasSuffix(p, ".json") {
			return faultAt(ptr, "a function called by URI must be the URI of its definition (a .yaml, .yml or .json file)")
		}
		ref.url = rawGitHub(name)
	}
	if len(ref.url) > workflow.MaxKeyLength*4 {
		return faultAt(ptr, "the function's URI is too long")
	}
	fc := &functionCall{name: name, catalog: ref}
	t.function = fc
	return fc.compileWith(def, sc, t.path)
}

// rawGitHub is the URI of a GitHub repository's raw content for one of its pages: a repository
// (its default branch) or a tree or blob of a branch. Other URIs are kept as they are.
func rawGitHub(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || !strings.EqualFold(u.Host, "github.com") {
		return raw
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	switch {
	case len(parts) == 2:
		return "https://raw.githubusercontent.com/" + parts[0] + "/" + parts[1] + "/HEAD"
	case len(parts) >= 4 && (parts[2] == "tree" || parts[2] == "blob"):
		return "https://raw.githubusercontent.com/" + parts[0] + "/" + parts[1] + "/refs/heads/" + strings.Join(parts[3:], "/")
	}
	return raw
}

// callCataloged runs a cataloged function: its definition fetched (or kept from a recent fetch)
// and compiled as the calling task's own, then its task run in this step on the arguments.
func (r *run) callCataloged(sc workflow.StepContext, t *task, args any) (any, *Problem, error) {
	ft, p := r.catalogTask(t, args)
	if p != nil {
		return nil, p, nil
	}
	if ft.cond != nil {
		v, p := r.evalTpl(ft, &template{expr: ft.cond}, args, nil)
		if p != nil {
			return nil, p, nil
		}
		if !truthy(v) {
			return args, nil, nil
		}
	}
	if p := validate(ft.inputSchema, args, t.path, "Input"); p != nil {
		return nil, p, nil
	}
	in := args
	if ft.inputFrom != nil {
		if in, p = r.evalTpl(ft, ft.inputFrom, args, nil); p != nil {
			return nil, p, nil
		}
	}
	var out any
	switch {
	case ft.kind == kindCall:
		out, p = r.callHTTP(ft, in)
	case ft.kind == kindOpenAPI:
		out, p = r.callOpenAPI(ft, in)
	case ft.kind == kindSet:
		out, p = r.evalTpl(ft, ft.set, in, nil)
	case ft.kind == kindRaise:
		v, p := r.evalTpl(ft, ft.raise, in, nil)
		if p != nil {
			return nil, p, nil
		}
		return nil, problemOf(v, t.path), nil
	case ft.kind == kindProcess:
		var err error
		if out, p, err = r.runProcess(sc, ft, in); err != nil {
			return nil, nil, err
		}
	case ft.kind == kindFunction && ft.function.catalog == nil:
		return r.callFunction(sc, ft, in)
	default:
		return nil, &Problem{Type: errTypeValidation, Status: 400, Title: "Unsupported Function", Instance: t.path,
			Detail: fmt.Sprintf("the function at %s is a %s task: cairn runs a cataloged function whose task is a call (http, openapi or a function served by name), set, raise or run: shell or script", r.prog.redact.text(t.function.catalog.url), ft.kind)}, nil
	}
	if p != nil {
		return nil, p, nil
	}
	if ft.outputAs != nil {
		if out, p = r.evalTpl(ft, ft.outputAs, out, map[string]any{"$input": in}); p != nil {
			return nil, p, nil
		}
	}
	if p := validate(ft.outputSchema, out, t.path, "Output"); p != nil {
		return nil, p, nil
	}
	return out, nil, nil
}

// catalogTask is the task of a cataloged function, compiled from its definition.
func (r *run) catalogTask(t *task, args any) (*task, *Problem) {
	ref := t.function.catalog
	invalid := func(format string, a ...any) *Problem {
		return &Problem{Type: errTypeValidation, Status: 400, Title: "Invalid Function", Detail: r.prog.redact.text(fmt.Sprintf(format, a...)), Instance: t.path}
	}
	cache := &r.prog.http.tokens
	key := cacheKey("function", ref.url)
	text, ok := cache.get(key, time.Now())
	if !ok {
		u, err := url.Parse(ref.url)
		if err != nil {
			return nil, invalid("%q is not a URI", ref.url)
		}
		raw, p := r.fetchResource(t, u, "application/yaml, application/json, text/plain", ref.auth, args, "Function")
		if p != nil {
			return nil, p
		}
		if len(raw) > maxFunctionBytes {
			return nil, invalid("the function at %s is larger than %d bytes", u.Redacted(), maxFunctionBytes)
		}
		text = string(raw)
		cache.put(key, text, time.Now().Add(catalogTTL))
	}
	def, _, err := decodeSource([]byte(text))
	if err != nil {
		return nil, invalid("the function at %s is not a task definition: %v", ref.url, err)
	}
	c := &compiler{prog: &program{byPath: map[string]*task{}, run: r.prog.run}, run: r.prog.run}
	ft, err := c.compileTask(t.name, t.path, def, scope(argsTask).with())
	if err != nil {
		return nil, invalid("the function at %s does not compile: %v", ref.url, err)
	}
	return ft, nil
}
