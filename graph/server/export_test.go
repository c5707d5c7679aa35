package server

import "reflect"

// MessagePlans returns the message types encodeMessage has met, by name, and for each whether it
// is written without json.Marshal.
func MessagePlans() map[string]bool {
	out := map[string]bool{}
	messagePlans.Range(func(k, v any) bool {
		out[k.(reflect.Type).Name()] = v.(messagePlan).ok
		return true
	})
	return out
}

// SentBySenders is how many messages the response senders have sent.
func SentBySenders() int64 { return sentBySenders.Load() }
