package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/workflow"
)

// requireInvalidInput checks that err is a client's error: INVALID_INPUT, never INTERNAL.
func requireInvalidInput(t *testing.T, err error) {
	t.Helper()
	var we *workflow.Error
	require.True(t, errors.As(err, &we), "%T %v", err, err)
	require.Equal(t, workflow.CodeInvalidInput, we.Code)
}

// marshal writes a scalar as gqlgen would.
func marshal(m interface{ MarshalGQL(w io.Writer) }) []byte {
	var b bytes.Buffer
	m.MarshalGQL(&b)
	return b.Bytes()
}

// FuzzUnmarshalTime: a Time is refused as INVALID_INPUT, or it is a UTC time in the years 0001
// to 9999 that the API writes back as a string that reads back to the same instant.
func FuzzUnmarshalTime(f *testing.F) {
	for _, s := range []string{"2026-11-21T13:00:00Z", "9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00Z",
		"9999-12-31T23:59:59.999999999Z", "0001-01-01T00:30:00+01:00", "2026-02-30T00:00:00Z", "yesterday"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tm, err := UnmarshalTime(s)
		if err != nil {
			requireInvalidInput(t, err)
			return
		}
		require.Equal(t, time.UTC, tm.Location())
		require.NoError(t, workflow.CheckTime("t", tm))
		var out string
		require.NoError(t, json.Unmarshal(marshal(MarshalTime(tm)), &out))
		again, err := UnmarshalTime(out)
		require.NoError(t, err)
		require.True(t, tm.Equal(again), "%s -> %s -> %s", s, out, again)
	})
}

// FuzzUnmarshalJSON: a JSON value (as gqlgen decodes variables) is refused as INVALID_INPUT
// exactly when one of its strings holds a NUL character, and otherwise becomes JSON text that
// decodes to the same value.
func FuzzUnmarshalJSON(f *testing.F) {
	for _, s := range []string{`{"k":"a\u0000b"}`, `{"k":"a\\u0000b"}`, `{"\u0000":1}`, `[1,"x",{"y":null}]`, `"é\u2028😀"`,
		`12345678901234567890`, `{"a":{"b":[true,false,"\ud83d\ude00"]}}`, `"\ud800"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber() // as gqlgen decodes a request's variables
		var v any
		if dec.Decode(&v) != nil {
			return
		}
		raw, err := UnmarshalJSON(v)
		if holdsNUL(v) {
			requireInvalidInput(t, err)
			return
		}
		require.NoError(t, err)
		require.True(t, json.Valid(raw))
		require.Equal(t, raw, json.RawMessage(marshal(MarshalJSON(raw))), "written as it is")
		dec = json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var back any
		require.NoError(t, dec.Decode(&back))
		require.Equal(t, v, back, "decode(encode(x)) == x")
	})
}

// holdsNUL reports whether a decoded JSON value has a NUL character in a string or key.
func holdsNUL(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.IndexByte(v, 0) >= 0
	case []any:
		for _, e := range v {
			if holdsNUL(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if strings.IndexByte(k, 0) >= 0 || holdsNUL(e) {
				return true
			}
		}
	}
	return false
}

// FuzzUnmarshalString: a String is refused as INVALID_INPUT exactly when it holds a NUL character
// or invalid UTF-8, and is otherwise taken as it is.
func FuzzUnmarshalString(f *testing.F) {
	for _, s := range []string{"order-1", "a\x00b", "\xff", "é😀", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := UnmarshalString(s)
		if strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
			requireInvalidInput(t, err)
			return
		}
		require.NoError(t, err)
		require.Equal(t, s, got)
	})
}

// FuzzUnmarshalInt: an Int is refused as INVALID_INPUT unless it is a 32-bit integer.
func FuzzUnmarshalInt(f *testing.F) {
	for _, n := range []int64{0, 1, -1, math.MaxInt32, math.MinInt32, math.MaxInt32 + 1, 99999999999, math.MinInt64} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n int64) {
		for _, v := range []any{n, json.Number(strconv.FormatInt(n, 10))} {
			got, err := UnmarshalInt(v)
			if n < math.MinInt32 || n > math.MaxInt32 {
				requireInvalidInput(t, err)
				continue
			}
			require.NoError(t, err)
			require.Equal(t, int(n), got)
			require.Equal(t, strconv.FormatInt(n, 10), string(marshal(MarshalInt(got))))
		}
	})
}
