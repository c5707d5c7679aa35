package model

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
)

// TestSharedResponses: the first subscription of a shape makes the event's response and the
// others wait for it; one that cannot be shared sends each back to make its own; an event keeps
// at most MaxSharedShapes of them.
func TestSharedResponses(t *testing.T) {
	ev := NewWorkflowEvent(&persistence.ChangeEvent{}, "c", "w", nil)
	ctx := context.Background()

	made, maker := ev.Share([32]byte{1})
	require.True(t, maker)
	waiting, maker := ev.Share([32]byte{1})
	require.False(t, maker)
	require.Same(t, made, waiting)
	got := make(chan []byte)
	go func() {
		data, ok := waiting.Wait(ctx)
		require.True(t, ok)
		got <- data
	}()
	made.Fill([]byte(`{"a":1}`))
	require.Equal(t, `{"a":1}`, string(<-got))

	failed, _ := ev.Share([32]byte{2})
	failed.Fill(nil) // it carried errors
	again, maker := ev.Share([32]byte{2})
	require.False(t, maker)
	_, ok := again.Wait(ctx)
	require.False(t, ok, "each makes its own")

	for i := 3; i <= MaxSharedShapes; i++ {
		r, maker := ev.Share([32]byte{byte(i)})
		require.True(t, maker)
		require.NotNil(t, r)
	}
	r, maker := ev.Share([32]byte{255})
	require.True(t, maker)
	require.Nil(t, r, "beyond MaxSharedShapes the response is made and not kept")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	pending, _ := ev.Share([32]byte{3})
	_, ok = pending.Wait(cancelled)
	require.False(t, ok, "a waiter whose request ended stops waiting")
}
