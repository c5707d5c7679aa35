package workflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/cairnflow/cairn/persistence"
)

// Limits on search attributes.
const (
	// MaxAttributes bounds the search attributes of one workflow.
	MaxAttributes = 32
	// MaxAttributeNameLength bounds an attribute's name, in characters.
	MaxAttributeNameLength = 64
	// MaxAttributeStringLength bounds a string attribute's value, in characters.
	MaxAttributeStringLength = 255
)

// attributeName is what an attribute's name may be: a letter or underscore, then letters, digits,
// underscores, dots or dashes.
var attributeName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.\-]*$`)

// CheckAttributeName refuses a name that is not an attribute name, with an INVALID_INPUT error
// naming field.
func CheckAttributeName(field, name string) error {
	if utf8.RuneCountInString(name) > MaxAttributeNameLength || !attributeName.MatchString(name) {
		return invalid(field, "attribute name %q: a letter or _, then letters, digits, _, . or -, at most %d characters", name, MaxAttributeNameLength)
	}
	return nil
}

// DecodeAttributes reads a JSON object of search attributes (name to raw value), checking its
// names and count; field names the object in errors. With allowNull, a null value (removing the
// attribute) is kept as a nil entry; otherwise it is refused.
func DecodeAttributes(field string, raw json.RawMessage, allowNull bool) (map[string]json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, invalid(field, "attributes must be a JSON object of names to strings, numbers, booleans or times")
	}
	if len(m) > MaxAttributes {
		return nil, invalid(field, "at most %d attributes, not %d", MaxAttributes, len(m))
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := CheckAttributeName(field+"."+n, n); err != nil {
			return nil, err
		}
		if v := bytes.TrimSpace(m[n]); bytes.Equal(v, []byte("null")) {
			if !allowNull {
				return nil, invalid(field+"."+n, "attribute %q: null is not a value here", n)
			}
			m[n] = nil
		}
	}
	return m, nil
}

// SuggestedKind is the kind a first value gives a name never used before: a string that reads as an
// RFC 3339 time makes a time attribute.
func SuggestedKind(raw json.RawMessage) persistence.AttributeKind {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	switch x := v.(type) {
	case string:
		if _, err := time.Parse(time.RFC3339Nano, x); err == nil {
			return persistence.AttributeTime
		}
		return persistence.AttributeString
	case float64:
		return persistence.AttributeNumber
	case bool:
		return persistence.AttributeBoolean
	}
	return ""
}

// AttributeValueOf reads a JSON scalar as a value of an attribute of the given kind (a time as an
// RFC 3339 string), refusing with an INVALID_INPUT error naming field and the attribute a value of
// another kind or over the limits.
func AttributeValueOf(field, name string, raw json.RawMessage, kind persistence.AttributeKind) (persistence.AttributeValue, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&v); err != nil {
		return persistence.AttributeValue{}, invalid(field, "attribute %q: not a JSON value", name)
	}
	out := persistence.AttributeValue{Kind: kind}
	wrongKind := func() error {
		return invalid(field, "attribute %q holds %s values, not %s", name, describeKind(kind), describeJSON(v))
	}
	switch kind {
	case persistence.AttributeString:
		s, ok := v.(string)
		if !ok {
			return out, wrongKind()
		}
		if err := CheckString(field, s, MaxAttributeStringLength); err != nil {
			return out, invalid(field, "attribute %q: a string of at most %d characters with no NUL character", name, MaxAttributeStringLength)
		}
		out.S = s
	case persistence.AttributeNumber:
		n, ok := v.(float64)
		if !ok {
			return out, wrongKind()
		}
		out.N = n
	case persistence.AttributeBoolean:
		b, ok := v.(bool)
		if !ok {
			return out, wrongKind()
		}
		out.B = b
	case persistence.AttributeTime:
		s, ok := v.(string)
		if !ok {
			return out, wrongKind()
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return out, invalid(field, "attribute %q holds times (RFC 3339 strings), not %q", name, s)
		}
		if err := CheckTime(field, t); err != nil {
			return out, invalid(field, "attribute %q: times must lie in the years 0001 to 9999 (UTC)", name)
		}
		out.T = t.UTC().Truncate(time.Microsecond)
	default:
		return out, invalid(field, "attribute %q: a value must be a string, a number, a boolean or a time, not %s", name, describeJSON(v))
	}
	return out, nil
}

func describeKind(k persistence.AttributeKind) string {
	if k == persistence.AttributeTime {
		return "time (RFC 3339 string)"
	}
	return string(k)
}

func describeJSON(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
