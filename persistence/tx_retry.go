package persistence

import (
	"context"
	"math/rand/v2"
	"time"
)

// txAttempts bounds how many times a transaction runs when the database keeps rolling it back to
// break deadlocks: enough for a burst of contention on a parent and its children, few enough that
// a real fault surfaces at once.
const txAttempts = 5

// txBackoff is the first pause before running a rolled-back transaction again; it doubles per
// attempt and is jittered, so that the transactions that collided do not collide again in step.
const txBackoff = 2 * time.Millisecond

// retryTx runs run, a whole transaction, again while it fails with an error the dialect says the
// database rolled the transaction back for (a deadlock victim, a lock wait timeout, a serialization
// failure): such a transaction wrote nothing, and running it again is what the database asks for.
func (s *Store) retryTx(ctx context.Context, run func() error) error {
	for attempt := 1; ; attempt++ {
		err := run()
		if err == nil || attempt == txAttempts || !s.dialect.retryable(err) || ctx.Err() != nil {
			return err
		}
		s.retried.Add(1)
		d := txBackoff << (attempt - 1)
		t := time.NewTimer(d/2 + rand.N(d)) // 1 to 3 ms, then 2 to 6 ms, ...
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// TxRetries is how many transactions the database rolled back (to break a deadlock, or for a
// serialization failure) and the Store ran again, since it was opened.
func (s *Store) TxRetries() int64 { return s.retried.Load() }
