package server

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// wsType and wsMessage have the shape of gqlgen's transport messages (its types are unexported),
// its unexported noOp flag included.
type wsType string

func (t wsType) MarshalText() ([]byte, error) { return []byte(strings.ToLower(string(t))), nil }

type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    wsType          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
	//lint:ignore U1000 the shape of gqlgen's message: a field json.Marshal leaves out
	noOp bool
}

type wsLegacyMessage struct {
	Payload json.RawMessage `json:"payload,omitempty"`
	ID      string          `json:"id,omitempty"`
	Type    wsType          `json:"type"`
	//lint:ignore U1000 the shape of gqlgen's message: a field json.Marshal leaves out
	noOp bool
}

// wsPromoted has the transport's three fields and one more, promoted from an embedded struct.
type wsPromoted struct {
	wsExtra
	ID      string          `json:"id,omitempty"`
	Type    wsType          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

type wsExtra struct {
	Extra int `json:"extra"`
}

// encodeMessage writes what json.Marshal writes, as JSON, for every message the transport sends.
func TestEncodeMessageIsJSONMarshalsMessage(t *testing.T) {
	payload := json.RawMessage(`{"data":{"workflowEvents":{"cursor":"c1","type":"STARTED","note":"<a> & b"}}}`)
	for name, v := range map[string]any{
		"next":              &wsMessage{ID: "7", Type: "NEXT", Payload: payload},
		"ack with no id":    &wsMessage{Type: "CONNECTION_ACK", Payload: json.RawMessage(`{"server":"cairn"}`)},
		"ping payload sent": &wsMessage{Type: "PONG", Payload: json.RawMessage(` { "at" : 1 } `)},
		"no payload":        &wsMessage{ID: "7", Type: "COMPLETE"},
		"empty payload":     &wsMessage{Type: "PING", Payload: json.RawMessage{}},
		"legacy":            &wsLegacyMessage{ID: "1", Type: "DATA", Payload: payload},
		"errors":            &wsMessage{ID: "2", Type: "ERROR", Payload: json.RawMessage(`[{"message":"no","extensions":{"code":"FORBIDDEN"}}]`)},
		"an id to escape":   &wsMessage{ID: "a\"b<c>é\n\\", Type: "NEXT", Payload: payload},
		"plain string type": &struct {
			ID      string          `json:"id,omitempty"`
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload,omitempty"`
		}{ID: "3", Type: "next", Payload: payload},
		"another shape": &struct {
			ID      string          `json:"id,omitempty"`
			Type    wsType          `json:"type"`
			Payload json.RawMessage `json:"payload,omitempty"`
			Extra   int             `json:"extra"`
		}{ID: "3", Type: "NEXT", Payload: payload, Extra: 4},
		"a promoted field": &wsPromoted{wsExtra: wsExtra{Extra: 4}, ID: "3", Type: "NEXT", Payload: payload},
		"not a message":    map[string]int{"a": 1},
		"no payload field": &struct{ Type wsType }{Type: "X"},
	} {
		t.Run(name, func(t *testing.T) {
			want, err := json.Marshal(v)
			require.NoError(t, err)
			got, err := encodeMessage(v)
			require.NoError(t, err)
			require.JSONEq(t, string(want), string(got))
			require.True(t, json.Valid(got), "%s", got)
		})
	}
	// The transport's shape, its unexported flag included, has a plan; the others have none.
	require.True(t, planOf(reflect.TypeFor[wsMessage]()).ok)
	require.True(t, planOf(reflect.TypeFor[wsLegacyMessage]()).ok)
	require.False(t, planOf(reflect.TypeFor[wsPromoted]()).ok)
	// The caller's message is left as it was.
	m := &wsMessage{ID: "7", Type: "NEXT", Payload: payload}
	_, err := encodeMessage(m)
	require.NoError(t, err)
	require.Equal(t, payload, m.Payload)
}

// BenchmarkEncodeMessage compares json.Marshal with encodeMessage on a workflowEvents message.
func BenchmarkEncodeMessage(b *testing.B) {
	payload := json.RawMessage(`{"data":{"workflowEvents":{"cursor":"MTc2NDQ2MzIwMDAwMDAwMDAwMDo0Mg","type":"STATUS_CHANGED","at":"2026-11-30T00:40:00.123456Z","status":"FINISHED","state":"done","workflowId":"V29ya2Zsb3c6NDI","workflow":{"type":"bench.noop","businessKey":"order-42"}}}}`)
	m := &wsMessage{ID: "17", Type: "NEXT", Payload: payload}
	b.Run("json.Marshal", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(m)
		}
	})
	b.Run("encodeMessage", func(b *testing.B) {
		for b.Loop() {
			_, _ = encodeMessage(m)
		}
	})
}
