package persistence_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// Hints travel between nodes of one schema, never to a cairn in another schema of the same
// PostgreSQL database, where the same workflow IDs name other workflows: a cancel hint for
// workflow 1 there must not stop this schema's workflow 1.
func TestNotifierHintsStayInTheirSchema(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url := dbtest.URL(t, persistence.KindPostgres)
	open := func(url string) *persistence.Notifier {
		store, err := persistence.Open(ctx, url, persistence.OpenOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = store.Close() })
		return persistence.NewNotifier(store, nil)
	}
	sender := open(url)
	sameSchema := open(url)
	otherSchema := open(dbtest.URL(t, persistence.KindPostgres))
	// Subscribed before they run, so that each gets the empty hint of its first connection.
	same, unsubSame := sameSchema.Subscribe(persistence.TopicCancel)
	defer unsubSame()
	other, unsubOther := otherSchema.Subscribe(persistence.TopicCancel)
	defer unsubOther()
	for _, n := range []*persistence.Notifier{sender, sameSchema, otherSchema} {
		go n.Run(ctx)
	}
	// A listener delivers an empty hint when it (re)connects; wait for both to be listening.
	for _, ch := range []<-chan string{same, other} {
		select {
		case p := <-ch:
			require.Empty(t, p)
		case <-time.After(30 * time.Second):
			t.Fatal("a notifier never connected")
		}
	}

	sender.Notify(persistence.TopicCancel, "1:7")
	select {
	case p := <-same:
		require.Equal(t, "1:7", p)
	case <-time.After(30 * time.Second):
		t.Fatal("a node of the same schema never got the hint")
	}
	select {
	case p := <-other:
		t.Fatalf("a cairn in another schema got the hint %q", p)
	case <-time.After(300 * time.Millisecond):
	}
}
