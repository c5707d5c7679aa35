package workflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Limits on what the operations accept, the same for the GraphQL API and the Go SDK. They keep
// every stored value within what both databases index, store and read back: PostgreSQL's btree
// rows hold at most about 2.7 kB, its text and jsonb hold no NUL character, and SQLite stores
// times as text that must sort in time order and parse back.
const (
	// MaxKeyLength bounds, in characters, the strings that are indexed or looked up: definition
	// types, external IDs, business keys, launch tokens, idempotency keys, signal names, state
	// names, variable keys, executor groups, cron expressions, time zones and who submitted a form.
	MaxKeyLength = 255
	// MaxTextLength bounds, in characters, free text: reasons, state texts and form signatures.
	MaxTextLength = 4096
	// MinPriority and MaxPriority bound a workflow's or schedule's priority (GraphQL's Int is 32-bit).
	MinPriority = math.MinInt32
	MaxPriority = math.MaxInt32
)

// MinTime and MaxTime are the first and the last instant an operation accepts: years 0001 to 9999
// in UTC. Both databases store and read back every time between them, and on SQLite they sort as
// text. A time with an offset is checked after it is turned into UTC: 9999-12-31T23:59:59-23:59 is
// in the year 10000.
var (
	MinTime = time.Date(1, time.January, 1, 0, 0, 0, 0, time.UTC)
	MaxTime = time.Date(9999, time.December, 31, 23, 59, 59, 999999999, time.UTC)
)

// CheckTime refuses a time outside MinTime..MaxTime with an INVALID_INPUT error naming field.
func CheckTime(field string, t time.Time) error {
	if t.Before(MinTime) || t.After(MaxTime) {
		return invalid(field, "times must lie in the years 0001 to 9999 (UTC), not %s", t.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// CheckString refuses, with an INVALID_INPUT error naming field, a string that holds a NUL
// character or invalid UTF-8 (neither database stores them as text), or that is longer than max
// characters (max 0: no bound).
func CheckString(field, s string, max int) error {
	if strings.IndexByte(s, 0) >= 0 {
		return invalid(field, "must not contain the NUL character (\\u0000)")
	}
	if !utf8.ValidString(s) {
		return invalid(field, "must be valid UTF-8")
	}
	// A string of at most max bytes has at most max characters: count only longer ones.
	if max > 0 && len(s) > max {
		if n := utf8.RuneCountInString(s); n > max {
			return invalid(field, "must be at most %d characters long, not %d", max, n)
		}
	}
	return nil
}

// CheckJSON refuses, with an INVALID_INPUT error naming field, a JSON text whose strings (keys or
// values) hold a NUL character or an unpaired UTF-16 surrogate: PostgreSQL's jsonb cannot store
// them, and SQLite must answer the same. raw is assumed to be valid JSON otherwise.
func CheckJSON(field string, raw []byte) error {
	if bad := jsonUnstorable(raw); bad != "" {
		return invalid(field, "JSON strings must not contain %s", bad)
	}
	return nil
}

// jsonUnstorable returns what makes a JSON text unstorable ("" when nothing does). A backslash
// only occurs inside strings, so escapes can be read without tracking where strings start.
func jsonUnstorable(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 && bytes.IndexByte(raw, 0) < 0 {
		return ""
	}
	pendingHigh := false // the previous escape was a high surrogate, which a low one must follow
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c == 0 {
			return "the NUL character (\\u0000)"
		}
		if c != '\\' {
			if pendingHigh {
				return "an unpaired UTF-16 surrogate"
			}
			continue
		}
		if i+1 >= len(raw) {
			return ""
		}
		if raw[i+1] != 'u' {
			if pendingHigh {
				return "an unpaired UTF-16 surrogate"
			}
			i++ // skip the escaped character (it may be a backslash)
			continue
		}
		if i+6 > len(raw) {
			return ""
		}
		r, ok := hex4(raw[i+2 : i+6])
		if !ok {
			return ""
		}
		i += 5
		switch {
		case r == 0:
			return "the NUL character (\\u0000)"
		case r >= 0xD800 && r < 0xDC00:
			if pendingHigh {
				return "an unpaired UTF-16 surrogate"
			}
			pendingHigh = true
		case r >= 0xDC00 && r < 0xE000:
			if !pendingHigh {
				return "an unpaired UTF-16 surrogate"
			}
			pendingHigh = false
		default:
			if pendingHigh {
				return "an unpaired UTF-16 surrogate"
			}
		}
	}
	if pendingHigh {
		return "an unpaired UTF-16 surrogate"
	}
	return ""
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

// checkVariables checks a variables object (or changes to one): storable JSON, and keys a
// variable row can be indexed by.
func checkVariables(field string, raw json.RawMessage) error {
	if err := CheckJSON(field, raw); err != nil {
		return err
	}
	if len(raw) <= 2 { // empty, null or {}
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil // not an object: the operation says so with its own message
	}
	for k := range m {
		if err := CheckString(field, k, MaxKeyLength); err != nil {
			return invalid(field, "variable key %.40q...: %s", k, err.(*Error).Message)
		}
	}
	return nil
}

// checkPriority refuses a priority outside MinPriority..MaxPriority.
func checkPriority(field string, p int) error {
	if p < MinPriority || p > MaxPriority {
		return invalid(field, "must be between %d and %d, not %d", MinPriority, MaxPriority, p)
	}
	return nil
}

// checkTimePtr is CheckTime for an optional time.
func checkTimePtr(field string, t *time.Time) error {
	if t == nil {
		return nil
	}
	return CheckTime(field, *t)
}

// firstError returns the first non-nil error.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Validate checks a start's strings, times, priority and JSON; field names an input field as the
// caller's API does.
func (p StartParams) Validate(field func(string) string) error {
	return firstError(
		CheckString(field("type"), p.Type, MaxKeyLength),
		CheckString(field("externalId"), p.ExternalID, MaxKeyLength),
		CheckString(field("businessKey"), p.BusinessKey, MaxKeyLength),
		CheckString(field("launchToken"), p.LaunchToken, MaxKeyLength),
		CheckString(field("idempotencyKey"), p.IdempotencyKey, MaxKeyLength),
		checkPriority(field("priority"), p.Priority),
		checkTimePtr(field("startAt"), p.StartAt),
		CheckJSON(field("input"), p.Input),
		checkVariables(field("variables"), p.Variables),
		CheckString(field("concurrencyKey"), p.ConcurrencyKey, MaxConcurrencyKeyLength),
		p.checkDebounce(field),
	)
}

func (p StartParams) checkDebounce(field func(string) string) error {
	if p.Debounce == nil {
		return nil
	}
	if p.Debounce.Key == "" {
		return invalid(field("debounce.key"), "a debounce needs a key")
	}
	if err := CheckString(field("debounce.key"), p.Debounce.Key, MaxConcurrencyKeyLength); err != nil {
		return err
	}
	if p.Debounce.Period <= 0 {
		return invalid(field("debounce.period"), "a debounce period must be longer than 0")
	}
	return nil
}

// Validate checks the common input of the operations on one workflow.
func (p ChangeParams) Validate() error {
	return firstError(
		CheckString("reason", p.Reason, MaxTextLength),
		CheckString("actor", p.Actor, MaxKeyLength),
		CheckString("idempotencyKey", p.IdempotencyKey, MaxKeyLength),
	)
}

// Validate checks what a retry adds to the common input (which change checks).
func (p RetryParams) Validate() error {
	return CheckString("state", p.State, MaxKeyLength)
}

// Validate checks what an update adds to the common input (which change checks).
func (p UpdateParams) Validate() error {
	errs := []error{checkTimePtr("nextActivation", p.NextActivation), checkVariables("variables", p.Variables)}
	if p.State != nil {
		errs = append(errs, CheckString("state", *p.State, MaxKeyLength))
	}
	if p.StateText != nil {
		errs = append(errs, CheckString("stateText", *p.StateText, MaxTextLength))
	}
	return firstError(errs...)
}

// Validate checks a signal's input.
func (p SignalParams) Validate() error {
	return firstError(
		CheckString("name", p.Name, MaxKeyLength),
		CheckJSON("payload", p.Payload),
		CheckString("idempotencyKey", p.IdempotencyKey, MaxKeyLength),
		CheckString("actor", p.Actor, MaxKeyLength),
	)
}

// Validate checks a schedule's input.
func (p ScheduleParams) Validate() error {
	return firstError(
		CheckString("type", p.Type, MaxKeyLength),
		CheckString("cron", p.Cron, MaxKeyLength),
		CheckString("timezone", p.Timezone, MaxKeyLength),
		checkTimePtr("startAt", p.StartAt),
		checkTimePtr("endAt", p.EndAt),
		CheckJSON("input", p.Input),
		checkPriority("priority", p.Priority),
		checkName(p.Name),
	)
}

// checkName checks a schedule's optional name: given, it is a non-empty key.
func checkName(name *string) error {
	if name == nil {
		return nil
	}
	if *name == "" {
		return NewError(CodeInvalidInput, "name", "must not be empty (omit it for none)")
	}
	return CheckString("name", *name, MaxKeyLength)
}

// Validate checks a schedule update's input.
func (p UpdateScheduleParams) Validate() error {
	var errs []error
	if p.Cron != nil {
		errs = append(errs, CheckString("cron", *p.Cron, MaxKeyLength))
	}
	if p.Timezone != nil {
		errs = append(errs, CheckString("timezone", *p.Timezone, MaxKeyLength))
	}
	if p.Priority != nil {
		errs = append(errs, checkPriority("priority", *p.Priority))
	}
	errs = append(errs, checkTimePtr("startAt", p.StartAt), checkTimePtr("endAt", p.EndAt), CheckJSON("input", p.Input))
	return firstError(errs...)
}

// Validate checks a form submission's input.
func (p SubmitFormParams) Validate() error {
	return firstError(
		CheckJSON("data", p.Data),
		CheckString("submittedBy", p.SubmittedBy, MaxKeyLength),
		CheckString("signature", p.Signature, MaxTextLength),
		CheckString("idempotencyKey", p.IdempotencyKey, MaxKeyLength),
	)
}

// checkStorable checks the names a definition stores and indexes: its type, executor group, state
// names and the signals its states wait for; and that its description holds no NUL character.
func (d *Definition) checkStorable() error {
	errs := []error{CheckString("type", d.Type, MaxKeyLength), CheckString("executorGroup", d.ExecutorGroup, MaxKeyLength),
		CheckString("description", d.Description, 0)}
	for _, s := range d.States {
		errs = append(errs, CheckString("states", s.Name, MaxKeyLength))
		if s.WaitFor != nil {
			errs = append(errs, CheckString("states", s.WaitFor.Signal, MaxKeyLength))
			for _, n := range s.WaitFor.Signals {
				errs = append(errs, CheckString("states", n, MaxKeyLength))
			}
		}
		for _, n := range s.Next {
			errs = append(errs, CheckString("states", n, MaxKeyLength))
		}
	}
	return firstError(errs...)
}

// CompileFormSchema compiles the form schema (a JSON Schema document) of a state of definition typ;
// a schema that does not compile is INVALID_INPUT naming the state.
func CompileFormSchema(typ, state string, raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, invalid("states", "definition %s: state %q: form schema is not JSON: %v", typ, state, err)
	}
	c := jsonschema.NewCompiler()
	url := fmt.Sprintf("cairn:///%s/%s/form.json", typ, state)
	if err := c.AddResource(url, doc); err != nil {
		return nil, invalid("states", "definition %s: state %q: form schema: %v", typ, state, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, invalid("states", "definition %s: state %q: form schema: %v", typ, state, err)
	}
	return sch, nil
}
