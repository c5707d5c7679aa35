package serverless

import (
	"encoding/json"
	"fmt"
	"math"

	yaml "sigs.k8s.io/yaml/goyaml.v3"
)

// decodeYAML reads the first YAML 1.2 document of source (JSON is YAML) as JSON. YAML 1.2's core
// schema takes only true and false for booleans: an unquoted on, yes, y or n (keys or values) is
// the string it reads as, as the spec's documents write `on:`. A key that is not a string (a
// number, a boolean, null) is its text, and so is a date; a collection as a key, or a value JSON cannot hold (.inf,
// .nan), is refused.
func decodeYAML(source []byte) ([]byte, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(source, &root); err != nil {
		return nil, err
	}
	keepTimestamps(&root)
	var v any
	if err := root.Decode(&v); err != nil {
		return nil, err
	}
	plain, err := jsonValue(v)
	if err != nil {
		return nil, err
	}
	return json.Marshal(plain)
}

// keepTimestamps makes a date or time written unquoted the string it is written as, as JSON has no
// timestamps (2026-11-28 stays "2026-11-28").
func keepTimestamps(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!timestamp" {
		n.Tag = "!!str"
	}
	for _, c := range n.Content {
		keepTimestamps(c)
	}
}

// jsonValue turns a value yaml decoded into one encoding/json encodes as the YAML reads.
func jsonValue(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			j, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			x[k] = j
		}
		return x, nil
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			var key string
			switch kk := k.(type) {
			case string:
				key = kk
			case nil:
				key = "null"
			case bool, int, int64, uint64, float64:
				key = fmt.Sprint(kk)
			default:
				return nil, fmt.Errorf("a mapping key must be a scalar, not %T", k)
			}
			if _, dup := out[key]; dup {
				return nil, fmt.Errorf("the key %q is given twice", key)
			}
			j, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			out[key] = j
		}
		return out, nil
	case []any:
		for i, e := range x {
			j, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			x[i] = j
		}
		return x, nil
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, fmt.Errorf("%v is not a number JSON can hold", x)
		}
	}
	return v, nil
}
