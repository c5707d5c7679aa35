package serverless

import (
	"math/big"
	"reflect"
)

// A jq value may share its parts: reduce range(30) as $i (1; [., .]) takes a few KB, and as JSON
// (what the engine stores, and what tojson makes) 2^30 leaves. jsonSize measures a value as JSON
// with each shared part measured once, so such a value is refused before anything encodes it.

// sizeKey names a shared part: a map, or a slice by its backing array and length.
type sizeKey struct {
	ptr uintptr
	n   int
}

// jsonSize returns about how many bytes v takes as JSON, or a number above limit as soon as it
// passes it.
func jsonSize(v any, limit int64) int64 {
	return (&sizer{memo: map[sizeKey]int64{}, limit: limit}).size(v)
}

type sizer struct {
	memo  map[sizeKey]int64
	limit int64
}

func (s *sizer) size(v any) int64 {
	switch x := v.(type) {
	case nil:
		return 4
	case bool:
		return 5
	case string:
		return int64(len(x)) + 2
	case int, float64:
		return 24
	case *big.Int:
		return int64(x.BitLen()/3) + 2
	case []any:
		if len(x) == 0 {
			return 2
		}
		k := sizeKey{reflect.ValueOf(x).Pointer(), len(x)}
		if n, ok := s.memo[k]; ok {
			return n
		}
		total := int64(2)
		for _, e := range x {
			if total += s.size(e) + 1; total > s.limit {
				break
			}
		}
		s.memo[k] = total
		return total
	case map[string]any:
		k := sizeKey{reflect.ValueOf(x).Pointer(), -1}
		if n, ok := s.memo[k]; ok {
			return n
		}
		total := int64(2)
		for key, e := range x {
			if total += int64(len(key)) + 4 + s.size(e); total > s.limit {
				break
			}
		}
		s.memo[k] = total
		return total
	default:
		return 24
	}
}
