package maintenance

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestConfigsAreCheckedOnce(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	noop := func(context.Context) (int, error) { return 0, nil }
	_, err := NewRecovery(RecoveryConfig{Interval: 0, Recover: noop, Logger: log})
	require.Error(t, err, "no interval")
	_, err = NewRecovery(RecoveryConfig{Interval: time.Second, Logger: log})
	require.Error(t, err, "no Recover")
	_, err = NewLeaseSweeper(LeaseSweeperConfig{Interval: time.Second, Expire: noop, CancelEnded: noop, Logger: log})
	require.Error(t, err, "CancelEvery 0")
	_, err = NewRetention(RetentionConfig{Retention: time.Hour, Interval: time.Second, Logger: log})
	require.Error(t, err, "no store")
	_, err = NewHeartbeat(HeartbeatConfig{Interval: time.Second, Expiry: time.Second})
	require.Error(t, err, "no store, executor or callback")
	_, err = NewStatistics(StatisticsConfig{Interval: time.Second, Logger: log})
	require.Error(t, err, "no Refresh")
	_, err = NewStatistics(StatisticsConfig{Refresh: func(context.Context) ([]string, error) { return nil, nil }, Logger: log})
	require.Error(t, err, "no interval")
	_, err = NewWakeRelay(nil)
	require.Error(t, err)
	_, err = NewCancelListener(nil)
	require.Error(t, err)
}

// A service starts once, runs on its ticker, and Stop waits for its goroutine.
func TestServiceStartsOnceAndStops(t *testing.T) {
	t.Parallel()
	var rounds atomic.Int32
	r, err := NewRecovery(RecoveryConfig{Interval: 5 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
		Recover: func(context.Context) (int, error) { rounds.Add(1); return 0, nil }})
	require.NoError(t, err)
	r.Stop() // before Start: nothing to stop
	require.NoError(t, r.Start(context.Background()))
	require.ErrorIs(t, r.Start(context.Background()), ErrStarted)
	require.Eventually(t, func() bool { return rounds.Load() >= 3 }, 10*time.Second, time.Millisecond)
	r.Stop()
	after := rounds.Load()
	time.Sleep(30 * time.Millisecond)
	require.Equal(t, after, rounds.Load(), "no round after Stop returned")
}
