package replicas

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
)

// A replica's lag is how long ago the primary wrote the oldest position it has not replayed.
func TestLagIsTheAgeOfTheOldestUnreplayedWrite(t *testing.T) {
	t.Parallel()
	rep := &replica{}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	keep := 10 * time.Second
	require.Zero(t, rep.lag(t0, 100, 100, keep), "caught up")
	require.Zero(t, rep.lag(t0.Add(time.Second), 200, 100, keep), "behind what the primary wrote just now only")
	require.Equal(t, 2*time.Second, rep.lag(t0.Add(3*time.Second), 300, 150, keep), "the write at 1s is not replayed")
	require.Zero(t, rep.lag(t0.Add(4*time.Second), 300, 300, keep), "caught up again")
	require.Zero(t, rep.lag(t0.Add(8*time.Second), 400, 300, keep), "400 is first seen now")
	require.Equal(t, 2*time.Second, rep.lag(t0.Add(10*time.Second), 500, 300, keep), "replay stopped at 300 since 8s")
	require.LessOrEqual(t, len(rep.seen), 7)
	rep.lag(t0.Add(time.Minute), 400, 400, keep)
	require.Len(t, rep.seen, 1, "old samples are forgotten")
}

func TestWALPositionsRoundTrip(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"0/0", "16/B374D848", "FFFFFFFF/FFFFFFFF"} {
		p, err := persistence.ParseWALPosition(s)
		require.NoError(t, err)
		require.Equal(t, s, p.String())
	}
	p, _ := persistence.ParseWALPosition("1/0")
	q, _ := persistence.ParseWALPosition("0/FFFFFFFF")
	require.Greater(t, p, q)
	for _, bad := range []string{"", "yesterday", "1/", "/1", "1/2/3", "G/1", "100000000/0"} {
		_, err := persistence.ParseWALPosition(bad)
		require.Error(t, err, bad)
	}
}
