package serverless

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// noLoader refuses every schema reference that leaves the document: a deployed document must
// not make a node read its files or the network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema reference %s leaves the document; only references inside it are followed", url)
}

// compileSchema compiles an input or output schema (format json, an inline document).
func compileSchema(raw any, ptr string) (*jsonschema.Schema, error) {
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, faultAt(ptr, "a schema must be an object with format and document")
	}
	if f, ok := m["format"].(string); ok && f != "json" && f != "" {
		return nil, faultAt(ptr+"/format", "schema format %q is not supported (json is)", f)
	}
	if _, ok := m["resource"]; ok {
		return nil, faultAt(ptr+"/resource", "external schema resources are not supported; inline the schema as document")
	}
	doc, ok := m["document"]
	if !ok {
		return nil, faultAt(ptr+"/document", "a schema needs its document")
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, faultAt(ptr+"/document", "%v", err)
	}
	parsed, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, faultAt(ptr+"/document", "%v", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	url := "cairn:///document" + ptr + ".json"
	if err := c.AddResource(url, parsed); err != nil {
		return nil, faultAt(ptr+"/document", "%v", err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, faultAt(ptr+"/document", "not a valid JSON Schema: %v", err)
	}
	return sch, nil
}

// validate checks a value against a schema (nil: nothing to check); a mismatch is a validation
// Problem of the task.
func validate(sch *jsonschema.Schema, v any, instance, what string) *Problem {
	if sch == nil {
		return nil
	}
	// The validator reads JSON values as it decodes them itself (numbers as json.Number).
	b, err := json.Marshal(v)
	if err == nil {
		var doc any
		if doc, err = jsonschema.UnmarshalJSON(bytes.NewReader(b)); err == nil {
			err = sch.Validate(doc)
		}
	}
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	detail := err.Error()
	if errors.As(err, &ve) {
		detail = fmt.Sprintf("%v", ve)
	}
	return &Problem{Type: errTypeValidation, Status: 400, Title: "Invalid " + what, Detail: detail, Instance: instance}
}
