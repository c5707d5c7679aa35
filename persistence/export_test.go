package persistence

// KeyHeadsForTest is keyHeadsLateral, for the plan tests of the external test package.
var KeyHeadsForTest = keyHeadsLateral

// KeyHeadsForTestOf asks KeyHeadsForTest for the oldest due workflow of each key.
func KeyHeadsForTestOf(keys ...string) []keyHead {
	out := make([]keyHead, len(keys))
	for i, k := range keys {
		out[i] = keyHead{key: k, n: 1}
	}
	return out
}
