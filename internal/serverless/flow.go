// Flow control in a document: document.metadata.flowControl holds a concurrency limit and a rate
// limit as a Go definition's FlowControl does (periods as "1s", "1m" or ISO 8601 "PT1S").

package serverless

import (
	"github.com/cairnflow/cairn/workflow"
)

// compileFlowControl reads document.metadata.flowControl (nil when absent).
func compileFlowControl(meta map[string]any) (*workflow.FlowControl, error) {
	md, _ := meta["metadata"].(map[string]any)
	raw, ok := md["flowControl"]
	if !ok {
		return nil, nil
	}
	const at = "/document/metadata/flowControl"
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, faultAt(at, "flowControl is an object of concurrency and rateLimit")
	}
	fc := &workflow.FlowControl{}
	for k := range m {
		if k != "concurrency" && k != "rateLimit" {
			return nil, faultAt(at+"/"+k, "flowControl has concurrency and rateLimit only, not %q", k)
		}
	}
	intOf := func(v any, ptr string) (int, error) {
		f, ok := v.(float64)
		if !ok || f != float64(int(f)) || f < 1 || f > 1<<31-1 {
			return 0, faultAt(ptr, "a limit is a whole number of at least 1")
		}
		return int(f), nil
	}
	strOf := func(v any, ptr string) (string, error) {
		if v == nil {
			return "", nil
		}
		s, ok := v.(string)
		if !ok {
			return "", faultAt(ptr, "must be a string")
		}
		return s, nil
	}
	if c, ok := m["concurrency"].(map[string]any); ok {
		limit, err := intOf(c["limit"], at+"/concurrency/limit")
		if err != nil {
			return nil, err
		}
		cc := &workflow.Concurrency{Limit: limit}
		var s string
		if s, err = strOf(c["scope"], at+"/concurrency/scope"); err != nil {
			return nil, err
		}
		cc.Scope = workflow.ConcurrencyScope(s)
		if s, err = strOf(c["strategy"], at+"/concurrency/strategy"); err != nil {
			return nil, err
		}
		cc.Strategy = workflow.ConcurrencyStrategy(s)
		if cc.Key, err = strOf(c["key"], at+"/concurrency/key"); err != nil {
			return nil, err
		}
		fc.Concurrency = cc
	} else if _, present := m["concurrency"]; present {
		return nil, faultAt(at+"/concurrency", "concurrency is an object (limit, scope, key, strategy)")
	}
	if r, ok := m["rateLimit"].(map[string]any); ok {
		limit, err := intOf(r["limit"], at+"/rateLimit/limit")
		if err != nil {
			return nil, err
		}
		rl := &workflow.RateLimit{Limit: limit}
		period, err := strOf(r["period"], at+"/rateLimit/period")
		if err != nil {
			return nil, err
		}
		if rl.Period, err = workflow.ParsePeriod("rateLimit.period", period); err != nil {
			return nil, faultAt(at+"/rateLimit/period", "%v", err)
		}
		if rl.Key, err = strOf(r["key"], at+"/rateLimit/key"); err != nil {
			return nil, err
		}
		fc.RateLimit = rl
	} else if _, present := m["rateLimit"]; present {
		return nil, faultAt(at+"/rateLimit", "rateLimit is an object (limit, period, key)")
	}
	if err := fc.Validate(""); err != nil {
		return nil, faultAt(at, "%v", err)
	}
	return fc, nil
}
