package serverless

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"sort"
	"strings"
)

// secretMark replaces a secret's value wherever a workflow would store or show it.
const secretMark = "[secret]"

// redactor keeps the node's secrets out of what workflows store: their variables and output,
// their Problems (lastError), activity logs, the inputs of their children and remote tasks. A
// value is tracked by its text, so a secret copied, concatenated or put in a URL is found; one
// transformed otherwise by an expression (say, reversed) is not.
type redactor struct {
	replacer *strings.Replacer // nil: the node has no secrets
}

// newRedactor tracks every string in the secrets (numbers and booleans are not secrets enough to
// hide: hiding "1" would rewrite every 1 a workflow writes).
func newRedactor(secrets map[string]any) *redactor {
	seen := map[string]bool{}
	var forms []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			for _, f := range secretForms(x) {
				if f != "" && !seen[f] {
					seen[f] = true
					forms = append(forms, f)
				}
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(secrets)
	if len(forms) == 0 {
		return &redactor{}
	}
	// The longest first: the replacer tries its pairs in order at each position, so a secret
	// that holds another is hidden whole.
	sort.Slice(forms, func(i, j int) bool {
		if len(forms[i]) != len(forms[j]) {
			return len(forms[i]) > len(forms[j])
		}
		return forms[i] < forms[j]
	})
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, secretMark)
	}
	return &redactor{replacer: strings.NewReplacer(pairs...)}
}

// secretForms are the texts a secret takes on its way through a call: as it is, escaped in a
// URL's query or path, inside a JSON string, and in base64 (basic authentication, say).
func secretForms(s string) []string {
	js, _ := json.Marshal(s)
	return []string{s, url.QueryEscape(s), url.PathEscape(s), string(js[1 : len(js)-1]),
		base64.StdEncoding.EncodeToString([]byte(s)), base64.RawURLEncoding.EncodeToString([]byte(s))}
}

// text is s without the secrets' values.
func (x *redactor) text(s string) string {
	if x == nil || x.replacer == nil {
		return s
	}
	return x.replacer.Replace(s)
}

// value is v (a JSON value) without the secrets' values in its strings and keys. It copies only
// what it changes: v may share maps with $secret itself, which must stay whole.
func (x *redactor) value(v any) any {
	if x == nil || x.replacer == nil {
		return v
	}
	out, _ := x.redact(v)
	return out
}

func (x *redactor) redact(v any) (any, bool) {
	switch t := v.(type) {
	case string:
		r := x.replacer.Replace(t)
		return r, r != t
	case map[string]any:
		var copied map[string]any
		for k, e := range t {
			rk := x.replacer.Replace(k)
			re, changed := x.redact(e)
			if !changed && rk == k {
				continue
			}
			if copied == nil {
				copied = make(map[string]any, len(t))
				for k2, e2 := range t {
					copied[k2] = e2
				}
			}
			delete(copied, k)
			copied[rk] = re
		}
		if copied == nil {
			return v, false
		}
		return copied, true
	case []any:
		var copied []any
		for i, e := range t {
			re, changed := x.redact(e)
			if !changed {
				continue
			}
			if copied == nil {
				copied = append([]any(nil), t...)
			}
			copied[i] = re
		}
		if copied == nil {
			return v, false
		}
		return copied, true
	}
	return v, false
}

// problem hides the secrets in a Problem's texts (an endpoint's URL in its detail, say).
func (x *redactor) problem(p *Problem) {
	if p == nil {
		return
	}
	p.Title, p.Detail, p.Instance, p.Type = x.text(p.Title), x.text(p.Detail), x.text(p.Instance), x.text(p.Type)
}

// hideSecrets removes the secrets' values from what the step is about to store: the workflow's
// data, context, output, the frames around the current task, a listen task's events, and the
// Problem it faults with or that a try caught.
func (r *run) hideSecrets(fault, caught *Problem) {
	r.hideWith(r.prog.redact, fault, caught)
	r.hideWith(r.authRedact, fault, caught)
}

func (r *run) hideWith(x *redactor, fault, caught *Problem) {
	if x == nil || x.replacer == nil {
		return
	}
	x.problem(caught) // a fault a try caught is still its attempt's error
	st := r.st
	st.Input, st.Data, st.Context, st.Output = x.value(st.Input), x.value(st.Data), x.value(st.Context), x.value(st.Output)
	for i := range st.Frames {
		f := &st.Frames[i]
		f.Input, f.Error, f.RawInput = x.value(f.Input), x.value(f.Error), x.value(f.RawInput)
		// Copied, not changed in place: a for task's items may be a list of $secret itself.
		f.Items, _ = x.value(f.Items).([]any)
	}
	if l := st.Listen; l != nil {
		l.Events, _ = x.value(l.Events).([]any)
		l.Values, _ = x.value(l.Values).(map[string]any)
	}
	x.problem(fault)
}

// secretsValue is $secret for one evaluation: a copy, because gojq rewrites the numbers of the
// maps it is given in place, and every step of the node reads the secrets at once (concurrent
// writes to one map would end the process).
func (p *program) secretsValue() map[string]any {
	m, _ := copyJSON(p.secrets).(map[string]any)
	return m
}

func copyJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = copyJSON(e)
		}
		return m
	case []any:
		s := make([]any, len(t))
		for i, e := range t {
			s[i] = copyJSON(e)
		}
		return s
	}
	return v
}
