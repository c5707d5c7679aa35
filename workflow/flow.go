// Flow control: how many workflows of a type run at once per key, and how often their steps start.

package workflow

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/itchyny/gojq"
)

// ConcurrencyScope says how long a workflow holds its key's slot.
type ConcurrencyScope string

// The concurrency scopes.
const (
	// ScopeWorkflow: from the workflow's first claim until it ends (FINISHED, FAILED, CANCELLED,
	// MANUAL) or is paused.
	ScopeWorkflow ConcurrencyScope = "WORKFLOW"
	// ScopeStep: only while one of its steps runs.
	ScopeStep ConcurrencyScope = "STEP"
)

// ConcurrencyStrategy says what happens to a workflow whose key has no free slot.
type ConcurrencyStrategy string

// The concurrency strategies.
const (
	// StrategyQueue: it waits, oldest first.
	StrategyQueue ConcurrencyStrategy = "QUEUE"
	// StrategyCancelNewest: a workflow that never ran is cancelled.
	StrategyCancelNewest ConcurrencyStrategy = "CANCEL_NEWEST"
	// StrategyCancelInProgress: the oldest holder of the key is cancelled to make room for it.
	StrategyCancelInProgress ConcurrencyStrategy = "CANCEL_IN_PROGRESS"
)

// MaxConcurrencyKeyLength bounds a concurrency key (an explicit one or one computed from the input).
const MaxConcurrencyKeyLength = 191

// Concurrency limits how many workflows of a type hold a slot at once, per key.
type Concurrency struct {
	// Limit is the number of slots per key (at least 1).
	Limit int `json:"limit"`
	// Scope is WORKFLOW (the default) or STEP.
	Scope ConcurrencyScope `json:"scope,omitempty"`
	// Key is a jq expression over the workflow's input giving its key, used when a start gives no
	// concurrency key of its own. Workflows without a key share one pool for the type.
	Key string `json:"key,omitempty"`
	// Strategy is QUEUE (the default), CANCEL_NEWEST or CANCEL_IN_PROGRESS.
	Strategy ConcurrencyStrategy `json:"strategy,omitempty"`
}

// RateLimit bounds how many steps of a type start per period, spread evenly, per key.
type RateLimit struct {
	Limit  int           `json:"limit"`
	Period time.Duration `json:"period"`
	// Key is a jq expression over the workflow's input; empty: one limit for the type.
	Key string `json:"key,omitempty"`
}

// FlowControl holds a type's work back: a concurrency limit, a rate limit, or both.
type FlowControl struct {
	Concurrency *Concurrency `json:"concurrency,omitempty"`
	RateLimit   *RateLimit   `json:"rateLimit,omitempty"`
}

// WithDefaults fills in the scope and strategy a concurrency limit left empty.
func (f FlowControl) WithDefaults() FlowControl {
	if f.Concurrency != nil {
		c := *f.Concurrency
		if c.Scope == "" {
			c.Scope = ScopeWorkflow
		}
		if c.Strategy == "" {
			c.Strategy = StrategyQueue
		}
		f.Concurrency = &c
	}
	return f
}

// Validate checks limits, scope, strategy, period and key expressions; field prefixes the field
// named in an error ("flowControl" gives "flowControl.concurrency.limit").
func (f *FlowControl) Validate(field string) error {
	at := func(s string) string {
		if field == "" {
			return s
		}
		return field + "." + s
	}
	if c := f.Concurrency; c != nil {
		if c.Limit <= 0 {
			return invalid(at("concurrency.limit"), "a concurrency limit must be at least 1, not %d", c.Limit)
		}
		switch c.Scope {
		case "", ScopeWorkflow, ScopeStep:
		default:
			return invalid(at("concurrency.scope"), "unknown concurrency scope %q (WORKFLOW or STEP)", c.Scope)
		}
		switch c.Strategy {
		case "", StrategyQueue, StrategyCancelNewest, StrategyCancelInProgress:
		default:
			return invalid(at("concurrency.strategy"), "unknown concurrency strategy %q (QUEUE, CANCEL_NEWEST or CANCEL_IN_PROGRESS)", c.Strategy)
		}
		if _, err := CompileKey(at("concurrency.key"), c.Key); err != nil {
			return err
		}
	}
	if r := f.RateLimit; r != nil {
		if r.Limit <= 0 {
			return invalid(at("rateLimit.limit"), "a rate limit must be at least 1, not %d", r.Limit)
		}
		if r.Period <= 0 {
			return invalid(at("rateLimit.period"), "a rate limit's period must be longer than 0")
		}
		if _, err := CompileKey(at("rateLimit.key"), r.Key); err != nil {
			return err
		}
	}
	return nil
}

// KeyExpr is a compiled key expression (nil: none).
type KeyExpr struct {
	code *gojq.Code
	src  string
}

// CompileKey compiles a jq key expression ("" gives nil); field names it in an error.
func CompileKey(field, src string) (*KeyExpr, error) {
	if strings.TrimSpace(src) == "" {
		return nil, nil
	}
	if err := CheckString(field, src, MaxTextLength); err != nil {
		return nil, err
	}
	q, err := gojq.Parse(src)
	if err != nil {
		return nil, invalid(field, "the key expression does not parse: %v", err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, invalid(field, "the key expression does not compile: %v", err)
	}
	return &KeyExpr{code: code, src: src}, nil
}

// Eval computes the key of a workflow from its input (a JSON object): the expression's first
// value, a string as it is and anything else as JSON; null gives "" (no key). No value, an error,
// an empty string or a key longer than MaxConcurrencyKeyLength is an error saying why.
func (k *KeyExpr) Eval(input json.RawMessage) (string, error) {
	var v any = map[string]any{}
	if len(input) > 0 {
		if err := json.Unmarshal(input, &v); err != nil {
			return "", fmt.Errorf("the input is not JSON: %v", err)
		}
	}
	iter := k.code.Run(v)
	out, ok := iter.Next()
	if !ok {
		return "", fmt.Errorf("key expression %q gave no value", k.src)
	}
	if err, isErr := out.(error); isErr {
		return "", fmt.Errorf("key expression %q failed: %v", k.src, err)
	}
	var key string
	switch x := out.(type) {
	case nil:
		return "", nil
	case string:
		key = x
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return "", fmt.Errorf("key expression %q gave a value that is not JSON: %v", k.src, err)
		}
		key = string(b)
	}
	if key == "" {
		return "", fmt.Errorf("key expression %q gave an empty key", k.src)
	}
	if len(key) > MaxConcurrencyKeyLength {
		return "", fmt.Errorf("key expression %q gave a key of %d bytes, longer than %d", k.src, len(key), MaxConcurrencyKeyLength)
	}
	return key, nil
}

var isoPeriod = regexp.MustCompile(`^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$`)

// ParsePeriod reads a rate limit's period: a Go duration ("1s", "1m", "250ms") or an ISO 8601 one
// ("PT1S", "P1D"). field names it in an error.
func ParsePeriod(field, s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return 0, invalid(field, "a period must be longer than 0")
		}
		return d, nil
	}
	m := isoPeriod.FindStringSubmatch(s)
	if m == nil || s == "P" || s == "PT" {
		return 0, invalid(field, "%q is not a period (like 1s, 1m or PT1S)", s)
	}
	var nanos float64
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second} {
		if m[i+1] == "" {
			continue
		}
		n, err := strconv.ParseFloat(m[i+1], 64)
		if err != nil {
			return 0, invalid(field, "%q is not a period: %v", s, err)
		}
		nanos += n * float64(unit)
	}
	if nanos <= 0 || nanos > float64(math.MaxInt64/2) {
		return 0, invalid(field, "%q is not a period longer than 0", s)
	}
	return time.Duration(nanos), nil
}
